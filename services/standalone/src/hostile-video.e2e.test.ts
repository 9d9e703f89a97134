/**
 * A memory bomb through the HTTP API: a 1.7 MB MP4 of 16000×16000 PNG frames whose headers claim
 * 640×480, sent for burn-in to the shipped entry point (gateway and subtitle worker in one process, as
 * `npm start` runs them). Before the picture limit, ffmpeg drew it at 22 GB until the kernel killed it,
 * and the killed run was retried. Now the decoded first picture is refused within seconds, in plain
 * words, on the first delivery, while the service and every program it starts stay far below 1.5 GB.
 */
import { readdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort, makeHugeFrameVideo, makeSpeechWav, tempDir, withClaimedMp4PictureSize } from "@voiceloc/testing";
import { logLines, signalAndWait, startService, type ServiceProcess } from "./testing/processes.ts";

const KEY = "hostile-video-key-alice-1";
const headers = { "API-KEY": KEY, "Content-Type": "application/json" };
const GiB = 1024 * 1024 * 1024;
const PAGE = 4096;

/** Resident bytes of `pid` and every process descending from it, read from /proc. */
async function treeResidentBytes(pid: number): Promise<number> {
  const parents = new Map<number, number>();
  const resident = new Map<number, number>();
  for (const name of await readdir("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    const stat = await readFile(`/proc/${name}/stat`, "utf8").catch(() => "");
    // pid (comm) state ppid … rss is field 24; comm may hold spaces, so count from its closing parenthesis.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    if (fields.length < 22) continue;
    parents.set(Number(name), Number(fields[1]));
    resident.set(Number(name), Number(fields[21]) * PAGE);
  }
  let total = 0;
  for (const [candidate, bytes] of resident) {
    for (let at: number | undefined = candidate; at !== undefined && at > 1; at = parents.get(at)) {
      if (at === pid) {
        total += bytes;
        break;
      }
    }
  }
  return total;
}

/** The peak resident set (VmHWM) the kernel recorded for one process. */
async function peakResidentBytes(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, "utf8");
  const kb = /VmHWM:\s+(\d+) kB/.exec(status)?.[1];
  return Number(kb) * 1024;
}

describe("a 16000×16000 burn-in bomb whose headers say 640×480", () => {
  let dir: { path: string; cleanup: () => Promise<void> };
  let service: ServiceProcess;
  let base: string;

  beforeAll(async () => {
    dir = await tempDir("voiceloc-hostile-video-");
    const speech = await makeSpeechWav("Hello there, this is a short test.", { voice: "flite:slt", path: join(dir.path, "speech.wav") });
    const honest = await makeHugeFrameVideo(16000, 16000, join(dir.path, "honest.mp4"), { withSpeechFrom: speech, seconds: 3 });
    await writeFile(join(dir.path, "bomb.mp4"), withClaimedMp4PictureSize(await readFile(honest), 640, 480));
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    service = await startService(
      "gateway,subtitle",
      { DATA_DIR: join(dir.path, "data"), MEDIA_ROOT: dir.path, PUBLIC_BASE_URL: base, VOICELOC_API_KEYS: `alice:${KEY}`, CHILD_MEMORY_LIMIT_MB: "1024" },
      port,
    );
  }, 180_000);

  afterAll(async () => {
    if (service) await signalAndWait(service, "SIGTERM");
    await dir?.cleanup();
  });

  it("is refused within seconds by its decoded picture, in plain words, never retried, the whole process tree under 1.5 GB", async () => {
    const file = await readFile(join(dir.path, "bomb.mp4"));
    expect(file.length).toBeLessThan(10 * 1024 * 1024);

    let peakTree = 0;
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        peakTree = Math.max(peakTree, await treeResidentBytes(service.child.pid ?? 0));
        await new Promise((r) => setTimeout(r, 20));
      }
    })();

    const started = Date.now();
    const created = await fetch(`${base}/v1/videos/subtitle`, {
      method: "POST",
      headers,
      body: JSON.stringify({ file: "bomb.mp4", source_language: "English", target_language: "English", mode: "burn_in" }),
    });
    expect(created.status).toBe(202);
    const { id } = (await created.json()) as { id: string };
    let record: Record<string, unknown> = {};
    // A generous deadline for a loaded machine: the refusal itself takes well under a second.
    const deadline = Date.now() + 120_000;
    while (Date.now() < deadline) {
      record = (await (await fetch(`${base}/v1/videos/subtitle/${id}`, { headers })).json()) as Record<string, unknown>;
      if (record.task_status === "failed" || record.task_status === "completed") break;
      await new Promise((r) => setTimeout(r, 100));
    }
    const elapsed = Date.now() - started;
    sampling = false;
    await sampler;

    expect(record.task_status, JSON.stringify(record)).toBe("failed");
    expect(record.task_error).toBe(
      "The video's picture is 16000×16000 pixels (256 megapixels), more than the 35.4 megapixels this service takes (MAX_VIDEO_PIXELS): send a smaller video.",
    );
    // Within seconds, not minutes of retries (printed for the record; the deadline above is only a guard).
    expect(elapsed).toBeLessThan(60_000);
    // One delivery: an input failure is never redelivered.
    const deliveries = logLines(service).filter((line) => line.taskId === id && typeof line.deliveryCount === "number").map((line) => line.deliveryCount as number);
    expect(deliveries.length).toBeGreaterThan(0);
    expect(Math.max(...deliveries)).toBe(1);
    // The service and every program it started, sampled while the job ran, and the service's own peak.
    expect(peakTree).toBeGreaterThan(0);
    expect(peakTree).toBeLessThan(1.5 * GiB);
    expect(await peakResidentBytes(service.child.pid ?? 0)).toBeLessThan(1.5 * GiB);
    process.stdout.write(`bomb refused in ${elapsed} ms; peak resident of the process tree ${(peakTree / 1024 / 1024).toFixed(0)} MiB\n`);
  }, 180_000);
});
