/**
 * Log ids: every line written while a request is served carries its `requestId`, every line written
 * while a task runs its `taskId` and `kind`, whichever component writes it (engines, media, bus,
 * store); lines written for neither carry none. One process (the default configuration: every
 * service, the in-process bus), its whole log captured at debug level.
 */
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { Writable } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "@voiceloc/config";
import { createLogger } from "@voiceloc/log";
import { checkResponsesOf, freePort, tempDir } from "@voiceloc/testing";
import { startRuntime, type Runtime } from "./runtime.ts";
import { createEnglishBook } from "./testing/processes.ts";

const KEY = "e2e-key-log-ids-1";
type Line = Record<string, unknown>;
const lines: Line[] = [];
let startupLines: Line[];
let runtime: Runtime;
let base: string;
let dir: { path: string; cleanup: () => Promise<void> };

beforeAll(async () => {
  dir = await tempDir("voiceloc-log-ids-");
  const media = join(dir.path, "media");
  await mkdir(media, { recursive: true });
  await writeFile(join(media, "book.txt"), "The lighthouse keeper climbed the stairs at dusk. The boats came home one by one.\n");
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  checkResponsesOf(base);
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString("utf8").split("\n")) if (line.trim() !== "") lines.push(JSON.parse(line) as Line);
      done();
    },
  });
  const config = loadConfig({ DATA_DIR: dir.path, MEDIA_ROOT: media, PORT: String(port), HOST: "127.0.0.1", PUBLIC_BASE_URL: base, VOICELOC_API_KEYS: `alice:${KEY}`, LOG_LEVEL: "debug" });
  runtime = await startRuntime(config, createLogger({ level: "debug", destination: sink }));
  await new Promise((resolve) => setImmediate(resolve));
  startupLines = [...lines];
}, 180_000);

afterAll(async () => {
  await runtime?.stop();
  await dir?.cleanup();
});

const ids = (line: Line) => ({ requestId: line.requestId, taskId: line.taskId });
const described = (found: Line[]) => found.map((l) => `${String(l.component)}: ${String(l.msg)}`);

/** Waits until `until` holds of the lines logged so far (the log is written a turn after each line). */
async function logged(until: (all: Line[]) => boolean, withinMs = 120_000): Promise<void> {
  const deadline = Date.now() + withinMs;
  while (!until(lines)) {
    if (Date.now() > deadline) throw new Error("the lines waited for were not logged");
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe("log ids", () => {
  it("start-up lines (engine self-tests, store, bus) carry no request or task id", () => {
    expect(startupLines.length).toBeGreaterThan(5);
    expect(startupLines.some((l) => l.component === "tts" || l.component === "tts-registry")).toBe(true);
    for (const line of startupLines) expect(ids(line), String(line.msg)).toEqual({ requestId: undefined, taskId: undefined });
  });

  it("a speech request's engine and media lines, written by the synthesis service over the bus, carry the request's id", async () => {
    const requestId = "log-ids-speech-1";
    const res = await fetch(`${base}/v1/speech/synthesize`, {
      method: "POST",
      headers: { Authorization: `Bearer ${KEY}`, "Content-Type": "application/json", "X-Request-Id": requestId },
      body: JSON.stringify({ text: "Testing one two three.", language: "en" }),
    });
    expect(res.status).toBe(200);
    await res.arrayBuffer();
    await logged((all) => all.some((l) => l.requestId === requestId && l.msg === "request"));
    const served = lines.filter((l) => l.requestId === requestId);
    // the engine spoke the text, the speech file was encoded (ffmpeg, through media)
    expect(described(served)).toEqual(expect.arrayContaining(["tts: synthesized", "media: running ffmpeg"]));
    const engineLines = lines.filter((l) => l.msg === "synthesized" && !startupLines.includes(l));
    expect(engineLines.length).toBeGreaterThan(0);
    for (const line of engineLines) expect(line.requestId).toBe(requestId);
  }, 120_000);

  it("an audio book's engine and media lines carry its task id and kind, and none the id of the request that created it", async () => {
    const id = await createEnglishBook(base, KEY, "book.txt", "Log ids");
    await logged((all) => all.some((l) => l.taskId === id && l.msg === "task completed"));
    const task = lines.filter((l) => l.taskId === id);
    // the gateway's lines about the task (published, projected) belong to whichever request or event wrote them
    for (const line of task.filter((l) => l.component !== "gateway")) expect(line.requestId, String(line.msg)).toBeUndefined();
    // the engine, media and fetch lines: the worker's kind with the id (its own lines bind both)
    const components = task.filter((l) => l.component !== "worker" && l.component !== "gateway");
    expect(described(components)).toEqual(expect.arrayContaining(["tts: synthesized", "media: running ffmpeg", "fetch: fetch: input copied"]));
    for (const line of components) expect(line.kind, String(line.msg)).toBe("audiobook");
    // no engine line of the run went without it
    const spoken = lines.filter((l) => l.msg === "synthesized" && l.requestId === undefined && !startupLines.includes(l));
    expect(spoken.length).toBeGreaterThan(0);
    for (const line of spoken) expect(line.taskId).toBe(id);
  }, 180_000);
});
