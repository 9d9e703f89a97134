/**
 * The request lines are written buffered (see docs/observability.md), and none is lost on a stop:
 * the entry process gets SIGTERM right after answering, and every request's line is in its output,
 * up to the line it writes as it exits.
 */
import { afterEach, describe, expect, it } from "vitest";
import { freePort, tempDir } from "@voiceloc/testing";
import { logLines, signalAndWait, startService } from "./testing/processes.ts";

const KEY = "e2e-key-lines-1";
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

describe("request lines on SIGTERM", () => {
  it("writes the line of every request answered before the signal, through the fast path and the app alike", async () => {
    const dir = await tempDir("voiceloc-lines-");
    cleanups.push(() => dir.cleanup());
    const port = await freePort();
    const gateway = await startService("gateway", { DATA_DIR: dir.path, VOICELOC_API_KEYS: `alice:${KEY}` }, port);
    cleanups.push(async () => void (await signalAndWait(gateway, "SIGKILL")));
    const base = `http://127.0.0.1:${port}`;
    // lists (the fast path), an unknown record (the app's 404) and an unauthenticated read (the app's 401)
    const paths = ["/v1/audio_books/", "/v1/videos/subtitle/00000000-0000-4000-8000-000000000000", "/v1/voices/streams"];
    const ids: string[] = [];
    for (let batch = 0; batch < 30; batch += 1) {
      await Promise.all(
        Array.from({ length: 20 }, async (_, i) => {
          const id = `lines-${batch}-${i}`;
          ids.push(id);
          const headers: Record<string, string> = { "X-Request-Id": id, ...(i % 7 === 6 ? {} : { "API-KEY": KEY }) };
          const res = await fetch(`${base}${paths[i % paths.length]}`, { headers });
          await res.arrayBuffer();
          expect(res.headers.get("x-request-id")).toBe(id);
        }),
      );
    }
    const exit = await signalAndWait(gateway, "SIGTERM");
    expect({ code: exit.code, signal: exit.signal }).toEqual({ code: 0, signal: null });
    const lines = logLines(gateway);
    const logged = new Set(lines.filter((l) => l.msg === "request").map((l) => l.requestId));
    expect(ids.filter((id) => !logged.has(id))).toEqual([]);
    expect(ids).toHaveLength(600);
    // and the last line, written as the process exits (no timer runs after that)
    expect(lines.at(-1)?.msg).toBe("stopped");
  }, 180_000);
});
