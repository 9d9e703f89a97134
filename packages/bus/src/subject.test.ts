import { describe, expect, it } from "vitest";
import { InvalidArgumentError } from "./errors.ts";
import { assertName, assertSubject, subjectMatches, subjectsOverlap } from "./subject.ts";

describe("subjects", () => {
  it("matches NATS wildcards", () => {
    expect(subjectMatches("work.audiobook", "work.audiobook")).toBe(true);
    expect(subjectMatches("work.*", "work.audiobook")).toBe(true);
    expect(subjectMatches("work.*", "work.audiobook.x")).toBe(false);
    expect(subjectMatches("events.>", "events.task.done")).toBe(true);
    expect(subjectMatches("events.>", "events")).toBe(false);
    expect(subjectMatches("events.*.done", "events.task.done")).toBe(true);
    expect(subjectMatches("events.*.done", "events.task.failed")).toBe(false);
  });

  it("detects overlapping patterns", () => {
    expect(subjectsOverlap("work.>", "work.audiobook")).toBe(true);
    expect(subjectsOverlap("work.*", "work.audiobook")).toBe(true);
    expect(subjectsOverlap("work.a", "work.b")).toBe(false);
    expect(subjectsOverlap("a.>", "a")).toBe(false);
    expect(subjectsOverlap("*.x", "y.*")).toBe(true);
    expect(subjectsOverlap("a.b", "a.b.c")).toBe(false);
  });

  it("validates names and subjects", () => {
    expect(() => assertName("queue", "audiobook_v1")).not.toThrow();
    expect(() => assertName("queue", "audio.book")).toThrow(InvalidArgumentError);
    expect(() => assertSubject("work.audiobook", { wildcards: false })).not.toThrow();
    expect(() => assertSubject("work.*", { wildcards: false })).toThrow(InvalidArgumentError);
    expect(() => assertSubject("work.>.x", { wildcards: true })).toThrow(InvalidArgumentError);
    expect(() => assertSubject("work..x", { wildcards: true })).toThrow(InvalidArgumentError);
  });
});
