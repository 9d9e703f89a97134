import { describe, expect, it } from "vitest";
import { inLanes } from "./lanes.ts";

/** A promise settled from outside, to hold a lane's item open as long as the test wants. */
function gate(): { promise: Promise<void>; open: () => void } {
  let open = () => {};
  const promise = new Promise<void>((resolve) => (open = resolve));
  return { promise, open };
}

describe("inLanes", () => {
  it("runs at most `lanes` items at once and answers in the items' order whatever order they finish in", async () => {
    let running = 0;
    let most = 0;
    const gates = [gate(), gate(), gate(), gate(), gate()];
    const started: number[] = [];
    const result = inLanes([10, 20, 30, 40, 50], 2, async (item, index) => {
      running++;
      most = Math.max(most, running);
      started.push(index);
      await gates[index]?.promise;
      running--;
      return item + index;
    });
    // Finish them last first: a lane takes the next item as soon as its own ends.
    for (const i of [1, 0, 3, 2, 4]) {
      await new Promise((resolve) => setImmediate(resolve));
      gates[i]?.open();
    }
    expect(await result).toEqual([10, 21, 32, 43, 54]);
    expect(most).toBe(2);
    expect(started).toHaveLength(5);
  });

  it("after a failure starts nothing new, waits for the item still running, then throws the failure", async () => {
    const slow = gate();
    const started: number[] = [];
    let slowEnded = false;
    const result = inLanes([0, 1, 2, 3, 4], 2, async (item) => {
      started.push(item);
      if (item === 0) {
        await slow.promise;
        slowEnded = true;
        return item;
      }
      throw new Error(`item ${item} failed`);
    });
    let settled = false;
    void result.catch(() => (settled = true));
    await new Promise((resolve) => setImmediate(resolve));
    expect(settled).toBe(false);
    slow.open();
    await expect(result).rejects.toThrow("item 1 failed");
    expect(slowEnded).toBe(true);
    expect(started).toEqual([0, 1]);
  });

  it("an empty list is an empty answer", async () => {
    expect(await inLanes([], 4, async () => 1)).toEqual([]);
  });
});
