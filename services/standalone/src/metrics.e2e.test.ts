/**
 * `/metrics` scraped before, during and after real audio books, with the gateway and the audio book
 * worker as two processes over a real nats-server: the HTTP series (by route pattern) move on the
 * gateway, the task, stage and engine series on the worker, and the queue backlog (pending, then
 * drained) on both.
 */
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort, startNatsServer, tempDir } from "@voiceloc/testing";
import { signalAndWait, startService, type ServiceProcess } from "./testing/processes.ts";

const KEY = "metrics-key-alice-1";
const TOKEN = "scrape-token-0123456789";
const SENTENCES = [
  "The lighthouse keeper climbed the stairs every evening before the sun went down.",
  "He polished the great lens, trimmed the wick, and wrote the weather in a small book.",
  "Ships passed far out at sea, and none of them knew his name, yet all of them trusted his light.",
].join(" ");

let nats: Awaited<ReturnType<typeof startNatsServer>>;
let dir: { path: string; cleanup: () => Promise<void> };
const procs: ServiceProcess[] = [];

async function startProcess(services: string, env: Record<string, string>): Promise<ServiceProcess> {
  const proc = await startService(services, { ...env, LOG_LEVEL: "warn" }, await freePort(), 90_000);
  procs.push(proc);
  return proc;
}

/** Every sample of a scrape: `name{labels}` → value. */
async function scrape(proc: ServiceProcess): Promise<Map<string, number>> {
  const res = await fetch(`http://127.0.0.1:${proc.port}/metrics`, { headers: { Authorization: `Bearer ${TOKEN}` } });
  expect(res.status).toBe(200);
  const samples = new Map<string, number>();
  for (const line of (await res.text()).split("\n")) {
    if (line === "" || line.startsWith("#")) continue;
    const at = line.lastIndexOf(" ");
    samples.set(line.slice(0, at), Number(line.slice(at + 1)));
  }
  return samples;
}

const value = (samples: Map<string, number>, series: string) => samples.get(series) ?? 0;

beforeAll(async () => {
  nats = await startNatsServer();
  dir = await tempDir("voiceloc-metrics-");
});

afterAll(async () => {
  for (const p of procs.splice(0)) await signalAndWait(p, "SIGTERM");
  await nats?.stop();
  await dir?.cleanup();
});

describe("/metrics during a job", () => {
  it("shows the HTTP, task, stage, engine and queue series moving on the gateway and the worker", async () => {
    const media = join(dir.path, "media");
    await mkdir(media, { recursive: true });
    await writeFile(join(media, "book.txt"), Array.from({ length: 40 }, () => SENTENCES).join("\n\n"));
    const common = {
      NATS_URL: nats.url,
      DATA_DIR: dir.path,
      MEDIA_ROOT: media,
      VOICELOC_API_KEYS: `alice:${KEY}`,
      SIGNING_SECRET: "metrics-signing-secret-0123456789-abcdef",
      METRICS_TOKEN: TOKEN,
      WORKER_CONCURRENCY: "1",
    };
    const worker = await startProcess("audiobook", common);
    const gateway = await startProcess("gateway", common);
    const base = `http://127.0.0.1:${gateway.port}`;
    const headers = { "API-KEY": KEY, "Content-Type": "application/json" };

    // /metrics is not part of the public API: behind its token, absent from the OpenAPI document.
    expect((await fetch(`${base}/metrics`)).status).toBe(401);
    const openapi = (await (await fetch(`${base}/openapi.json`)).json()) as { paths: Record<string, unknown> };
    expect(Object.keys(openapi.paths).filter((p) => p.includes("metrics"))).toEqual([]);

    const POSTS = 'voiceloc_http_request_duration_seconds_count{method="POST",route="/v1/audio_books/",status="201"}';
    const GETS = 'voiceloc_http_request_duration_seconds_count{method="GET",route="/v1/audio_books/:audio_book_id",status="200"}';
    const STARTED = 'voiceloc_tasks_total{kind="audiobook",status="started"}';
    const COMPLETED = 'voiceloc_tasks_total{kind="audiobook",status="completed"}';
    const RUNNING = 'voiceloc_tasks_in_progress{kind="audiobook"}';
    const PENDING = 'voiceloc_queue_pending_messages{queue="audiobook"}';
    const ACK_PENDING = 'voiceloc_queue_ack_pending_messages{queue="audiobook"}';
    const REDELIVERED = 'voiceloc_queue_redelivered_messages{queue="audiobook"}';

    const gatewayBefore = await scrape(gateway);
    const workerBefore = await scrape(worker);
    expect(value(gatewayBefore, POSTS)).toBe(0);
    expect(value(workerBefore, STARTED)).toBe(0);
    expect(workerBefore.has(PENDING)).toBe(true);
    expect(value(workerBefore, PENDING)).toBe(0);
    expect(value(workerBefore, ACK_PENDING)).toBe(0);
    expect(value(gatewayBefore, "process_resident_memory_bytes")).toBeGreaterThan(0);

    // Two books (several seconds of speech each, so scrapes catch both states) for a worker that takes
    // one at a time: one runs, the other waits in the queue.
    const ids: string[] = [];
    for (const name of ["First", "Second"]) {
      const res = await fetch(`${base}/v1/audio_books/`, {
        method: "POST",
        headers,
        body: JSON.stringify({ file: "book.txt", name, source_language: "English", target_language: "English" }),
      });
      expect(res.status).toBe(201);
      ids.push(((await res.json()) as { id: string }).id);
    }
    expect(value(await scrape(gateway), POSTS)).toBe(2);

    // During: a task running on the worker, one delivered-unsettled message and one still pending.
    let seenRunning = false;
    let seenAckPending = 0;
    let seenPending = 0;
    const done = new Set<string>();
    const deadline = Date.now() + 150_000;
    while (done.size < ids.length) {
      if (Date.now() > deadline) throw new Error(`the books did not finish:\n${worker.output.join("").slice(-2_000)}`);
      const during = await scrape(worker);
      if (value(during, RUNNING) === 1 && value(during, STARTED) >= 1) seenRunning = true;
      const queue = await scrape(gateway);
      seenAckPending = Math.max(seenAckPending, value(queue, ACK_PENDING));
      seenPending = Math.max(seenPending, value(queue, PENDING));
      for (const id of ids) {
        const record = (await (await fetch(`${base}/v1/audio_books/${id}`, { headers })).json()) as { task_status: string; task_error: unknown };
        expect(record.task_status, String(record.task_error)).not.toBe("failed");
        if (record.task_status === "completed") done.add(id);
      }
      await new Promise((r) => setTimeout(r, 150));
    }
    expect(seenRunning, "a scrape while the task ran shows it in progress").toBe(true);
    expect(seenAckPending).toBe(1);
    expect(seenPending).toBe(1);

    // After: both completed, stages and engine calls timed, the queue drained.
    const workerAfter = await scrape(worker);
    expect(value(workerAfter, STARTED)).toBe(2);
    expect(value(workerAfter, COMPLETED)).toBe(2);
    expect(value(workerAfter, RUNNING)).toBe(0);
    expect(value(workerAfter, 'voiceloc_task_duration_seconds_count{kind="audiobook",status="completed"}')).toBe(2);
    for (const stage of ["fetch", "synthesize", "encode"]) {
      expect(value(workerAfter, `voiceloc_task_stage_duration_seconds_count{kind="audiobook",stage="${stage}"}`), stage).toBe(2);
    }
    const engineCalls = [...workerAfter].filter(([series]) => series.startsWith("voiceloc_engine_duration_seconds_count{") && series.includes('operation="synthesize",outcome="ok"'));
    expect(engineCalls.reduce((sum, [, n]) => sum + n, 0)).toBeGreaterThan(
      [...workerBefore].filter(([series]) => series.startsWith("voiceloc_engine_duration_seconds_count{")).reduce((sum, [, n]) => sum + n, 0),
    );
    let drained: Map<string, number> | undefined;
    for (let i = 0; i < 50; i += 1) {
      drained = await scrape(gateway);
      if (value(drained, PENDING) === 0 && value(drained, ACK_PENDING) === 0) break;
      await new Promise((r) => setTimeout(r, 200));
    }
    expect(value(drained!, PENDING)).toBe(0);
    expect(value(drained!, ACK_PENDING)).toBe(0);
    expect(value(drained!, REDELIVERED)).toBe(0);
    expect(value(drained!, GETS)).toBeGreaterThanOrEqual(2);
    // No series per record id: the route label is the pattern.
    expect([...drained!.keys()].filter((series) => ids.some((id) => series.includes(id)))).toEqual([]);
  });
});
