import { describe, expect, it } from "vitest";
import { RecordViews } from "./views.ts";

const record = (id: string, fields: Record<string, unknown> = {}) => JSON.stringify({ id, account_id: "alice", task_progress: 10, ...fields });

describe("record views", () => {
  const counting = (now: () => number = () => 5_000) => {
    const presented: string[] = [];
    const views = new RecordViews((doc) => {
      presented.push(doc.id);
      return { id: doc.id, progress: doc.task_progress, at: Math.floor(now() / 1000) };
    }, now);
    return { views, presented };
  };

  it("presents a record once per stored text and second, and only to its owner", () => {
    let clock = 5_000;
    const { views, presented } = counting(() => clock);
    const text = record("a");
    expect(views.fromText("a", text, "alice")?.body).toBe('{"id":"a","progress":10,"at":5}');
    expect(views.fromText("a", text, "alice")?.length).toBe("31");
    expect(presented).toEqual(["a"]);
    expect(views.fromText("a", text, "bob")).toBeNull();
    expect(views.fromText("a", record("a", { task_progress: 60 }), "alice")?.body).toBe('{"id":"a","progress":60,"at":5}');
    clock = 6_200;
    expect(views.fromText("a", record("a", { task_progress: 60 }), "alice")?.body).toBe('{"id":"a","progress":60,"at":6}');
    expect(presented).toEqual(["a", "a", "a"]);
  });

  it("answers without the text only under the change mark the text was last read under", () => {
    let clock = 5_000;
    const { views, presented } = counting(() => clock);
    expect(views.atMark("a", 7, "alice")).toBeUndefined();
    views.fromText("a", record("a"), "alice", 7);
    expect(views.atMark("a", 7, "alice")?.body).toBe('{"id":"a","progress":10,"at":5}');
    expect(views.atMark("a", 7, "bob")).toBeNull();
    expect(views.atMark("a", 8, "alice")).toBeUndefined();
    // read again under a new mark (unchanged text): answered under that one, no longer under the old
    views.fromText("a", record("a"), "alice", 8);
    expect(views.atMark("a", 8, "alice")).not.toBeUndefined();
    expect(views.atMark("a", 7, "alice")).toBeUndefined();
    // a text read without a mark is never answered from one
    views.fromText("a", record("a", { task_progress: 20 }), "alice");
    expect(views.atMark("a", 8, "alice")).toBeUndefined();
    views.fromText("a", record("a", { task_progress: 20 }), "alice", 9);
    clock = 6_100;
    expect(views.atMark("a", 9, "alice")?.body).toBe('{"id":"a","progress":20,"at":6}');
    expect(presented).toEqual(["a", "a", "a"]);
  });

  it("forgets every view once they weigh more than their bound, however few they are", () => {
    const { views, presented } = counting();
    const big = "x".repeat(1024 * 1024);
    const first = record("first", { name: big });
    views.fromText("first", first, "alice");
    views.fromText("first", first, "alice");
    expect(presented).toEqual(["first"]);
    // 17 records of 1 MiB weigh 51 MiB (three times their text): over the 48 MiB bound, so the memo starts over
    for (let i = 0; i < 16; i += 1) views.fromText(`r${i}`, record(`r${i}`, { name: big }), "alice");
    presented.length = 0;
    views.fromText("first", first, "alice");
    expect(presented).toEqual(["first"]);
  });
});
