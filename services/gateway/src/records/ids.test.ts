import { describe, expect, it } from "vitest";
import { uuidv7, uuidv7Generator } from "./ids.ts";

const timestampOf = (id: string) => parseInt(id.replace(/-/g, "").slice(0, 12), 16);

describe("uuidv7", () => {
  it("is a version 7, variant 1 UUID", () => {
    expect(uuidv7()).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  });

  it("sorts in creation order, also within one millisecond", () => {
    const next = uuidv7Generator();
    const ids = Array.from({ length: 5000 }, () => next(1_800_000_000_000));
    expect([...ids].sort()).toEqual(ids);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it("carries the timestamp it was made at", () => {
    // a fresh generator: no state from ids made before
    const at = Date.UTC(2026, 10, 22, 13, 45, 7, 123);
    expect(timestampOf(uuidv7Generator()(at))).toBe(at);
    expect(timestampOf(uuidv7Generator()(at + 1))).toBe(at + 1);
  });

  it("keeps sorting when the clock steps back: it reuses the last millisecond rather than go back", () => {
    const next = uuidv7Generator();
    const first = next(1_800_000_000_500);
    const second = next(1_800_000_000_000);
    expect(timestampOf(second)).toBe(1_800_000_000_500);
    expect(second > first).toBe(true);
  });
});
