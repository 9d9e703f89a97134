import { describe, expect, it } from "vitest";
import { uuidv7 } from "./ids.ts";

describe("uuidv7", () => {
  it("is a version 7, variant 1 UUID", () => {
    expect(uuidv7()).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  });

  it("sorts in creation order, also within one millisecond", () => {
    const ids = Array.from({ length: 5000 }, () => uuidv7(1_800_000_000_000));
    expect([...ids].sort()).toEqual(ids);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it("carries the timestamp", () => {
    const id = uuidv7(Date.UTC(2026, 10, 22));
    expect(parseInt(id.replace(/-/g, "").slice(0, 12), 16)).toBeGreaterThanOrEqual(Date.UTC(2026, 10, 22));
  });
});
