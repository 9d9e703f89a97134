import { createFsBlobStore } from "@voiceloc/blobs";
import { silentLogger } from "@voiceloc/log";
import { tempDir } from "@voiceloc/testing";
import { describe, expect, it } from "vitest";
import { createCheckpoints } from "./checkpoints.ts";
import { RetryableTaskError } from "./errors.ts";
import { readTranslationCheckpoint, translateWithCheckpoint } from "./translation.ts";

describe("translateWithCheckpoint", () => {
  it("translates once: a redelivery restores the stored translation; other languages or segments translate again; a failing engine is a retryable task failure", async () => {
    const dir = await tempDir("voiceloc-translation-test-");
    const blobs = createFsBlobStore({ root: dir.path, fsync: false });
    try {
      const calls: string[] = [];
      const mt = {
        async translate({ text, target }: { text: string; target: string }) {
          calls.push(text);
          if (target === "German") throw new RetryableTaskError("the translation service is busy");
          return text.toUpperCase();
        },
      };
      // a fresh delivery's context (its own work dir), over the same task's checkpoints
      const delivery = (n: number) => ({
        checkpoints: createCheckpoints({ blobs, taskId: "task-1", localDir: `${dir.path}/work-${n}`, signal: new AbortController().signal, working: () => undefined }),
        signal: new AbortController().signal,
        logger: silentLogger(),
      });
      const request = { texts: ["hello", "", "good night"], source: "English", target: "Spanish" } as const;

      expect(await translateWithCheckpoint(mt, request, delivery(1))).toEqual(["HELLO", "", "GOOD NIGHT"]);
      const translated = calls.length;
      expect(translated).toBeGreaterThan(0);

      expect(await translateWithCheckpoint(mt, request, delivery(2))).toEqual(["HELLO", "", "GOOD NIGHT"]);
      expect(calls).toHaveLength(translated);

      const checkpoints = delivery(3).checkpoints;
      expect(await readTranslationCheckpoint(checkpoints, { source: "English", target: "French" }, 3)).toBeUndefined();
      expect(await readTranslationCheckpoint(checkpoints, request, 2)).toBeUndefined();
      expect(await translateWithCheckpoint(mt, { ...request, texts: ["hello"] }, delivery(4))).toEqual(["HELLO"]);
      expect(calls.length).toBeGreaterThan(translated);

      await expect(translateWithCheckpoint(mt, { ...request, target: "German" }, delivery(5))).rejects.toBeInstanceOf(RetryableTaskError);
    } finally {
      await blobs.close();
      await dir.cleanup();
    }
  });
});
