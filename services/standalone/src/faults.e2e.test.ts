/**
 * The fault test: the mesh as separate processes (gateway, audio book worker, subtitle worker) over a
 * real nats-server, sharing the embedded store and blobs on disk. 50 concurrent creates (audio books and
 * a few subtitle jobs, 10 % of them repeating an Idempotency-Key); meanwhile both workers are SIGKILLed
 * mid-task and restarted, nats-server is restarted on the same store directory and the gateway is
 * restarted. Every task must complete, none lost, no duplicate record, no progress going backwards on
 * any observation; the time to resume after each fault is printed.
 *
 * A SIGKILLed worker cannot hand its tasks back: they come back after the work queues' ack wait, set low
 * here (WORK_ACK_WAIT_MS) while running tasks keep their leases with in-progress acks.
 */
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort, makeSpeechWav, makeTestVideo, startNatsServer, tempDir, type NatsServerHandle } from "@voiceloc/testing";
import { isRunning, logLines, signalAndWait, startService, type ServiceProcess } from "./testing/processes.ts";

type Kind = "audiobook" | "subtitle";
const ACCOUNTS = [
  { account: "alice", key: "fault-key-alice-1" },
  { account: "bob", key: "fault-key-bob-1" },
] as const;
const BOOKS = 40;
const SUBTITLES = 5;
/** Requests repeating an earlier Idempotency-Key (same account, same body): 10 % of 50. */
const REPEATED = [
  ["audiobook", 0],
  ["audiobook", 11],
  ["audiobook", 22],
  ["audiobook", 33],
  ["subtitle", 1],
] as const;
const TOPICS = ["river", "harbour", "forest", "market", "mountain", "library", "garden", "station"];

interface Request {
  kind: Kind;
  index: number;
  who: (typeof ACCOUNTS)[number];
  idempotencyKey: string;
  body: Record<string, unknown>;
}

interface Observation {
  at: number;
  status: string;
  progress: number;
}

let nats: NatsServerHandle;
let dir: { path: string; cleanup: () => Promise<void> };
const procs: ServiceProcess[] = [];

beforeAll(async () => {
  nats = await startNatsServer();
  dir = await tempDir("voiceloc-faults-");
});

afterAll(async () => {
  for (const proc of procs.splice(0)) if (isRunning(proc)) await signalAndWait(proc, "SIGKILL");
  await nats?.stop();
  await dir?.cleanup();
});

function requestFor(kind: Kind, index: number): Request {
  const who = ACCOUNTS[index % ACCOUNTS.length]!;
  if (kind === "audiobook") {
    return {
      kind,
      index,
      who,
      idempotencyKey: `book-${index}`,
      body: { file: `${TOPICS[index % TOPICS.length]}.txt`, name: `Book ${index}`, source_language: "English", target_language: "English" },
    };
  }
  return {
    kind,
    index,
    who,
    idempotencyKey: `subtitle-${index}`,
    body: { file: "talk.mp4", source_language: "English", target_language: "English", mode: index === 0 ? "burn_in" : "side_file", subtitle_format: "srt" },
  };
}

const PATHS: Record<Kind, string> = { audiobook: "/v1/audio_books/", subtitle: "/v1/videos/subtitle" };

describe("the mesh under faults", () => {
  it("completes 50 concurrent creates through worker SIGKILLs, a gateway restart and a nats-server restart: none lost, no duplicates, progress never backwards", async () => {
    const media = join(dir.path, "media");
    await mkdir(media, { recursive: true });
    for (const [i, topic] of TOPICS.entries()) {
      const sentences = [`This is a short story about the ${topic}.`, `On day ${i + 1} something unusual happened there.`];
      await writeFile(join(media, `${topic}.txt`), sentences.join("\n\n"));
    }
    const speech = await makeSpeechWav("The weather is very nice today. I would like a cup of hot coffee please.", {
      voice: "flite:slt",
      path: join(dir.path, "speech.wav"),
    });
    await makeTestVideo(5, join(media, "talk.mp4"), { withSpeechFrom: speech });

    const gatewayPort = await freePort();
    const base = `http://127.0.0.1:${gatewayPort}`;
    const common = {
      NATS_URL: nats.url,
      DATA_DIR: join(dir.path, "data"),
      MEDIA_ROOT: media,
      VOICELOC_API_KEYS: ACCOUNTS.map((a) => `${a.account}:${a.key}`).join(","),
      SIGNING_SECRET: "faults-signing-secret-0123456789-abcdef",
      PUBLIC_BASE_URL: base,
      WORK_ACK_WAIT_MS: "8000",
      WORKER_CONCURRENCY: "2",
      ACCOUNT_MAX_TASKS_IN_FLIGHT: "8",
      RATE_LIMIT_PER_MINUTE: "off",
      SHUTDOWN_TIMEOUT_MS: "20000",
      // the task events and deliveries of a task left behind are in the failure message
      LOG_LEVEL: "debug",
    };
    const ports = { audiobook: await freePort(), subtitle: await freePort() };
    const began = Date.now();
    const phase = (what: string) => process.stdout.write(`[faults] +${((Date.now() - began) / 1000).toFixed(1)} s ${what}\n`);
    const running: Record<"gateway" | Kind, ServiceProcess> = {} as Record<"gateway" | Kind, ServiceProcess>;
    const start = async (name: "gateway" | Kind) => {
      const proc = await startService(name, common, name === "gateway" ? gatewayPort : ports[name]);
      procs.push(proc);
      running[name] = proc;
      return proc;
    };
    await Promise.all([start("gateway"), start("audiobook"), start("subtitle")]);
    phase("gateway and workers ready");

    // ---- 50 concurrent creates, 5 of them repeating a key
    const distinct = [
      ...Array.from({ length: BOOKS }, (_, i) => requestFor("audiobook", i)),
      ...Array.from({ length: SUBTITLES }, (_, i) => requestFor("subtitle", i)),
    ];
    const repeats = REPEATED.map(([kind, index]) => requestFor(kind, index));
    const requests = [...distinct, ...repeats];
    expect(requests).toHaveLength(50);
    // a fixed shuffle, so that repeats race their originals
    const order = requests.map((r, i) => ({ r, k: (i * 37) % requests.length })).sort((a, b) => a.k - b.k).map((x) => x.r);

    const create = async (request: Request): Promise<{ id: string; replayed: boolean }> => {
      const deadline = Date.now() + 60_000;
      for (;;) {
        const res = await fetch(`${base}${PATHS[request.kind]}`, {
          method: "POST",
          headers: { "API-KEY": request.who.key, "Content-Type": "application/json", "Idempotency-Key": request.idempotencyKey },
          body: JSON.stringify(request.body),
        });
        const text = await res.text();
        // the same key still in flight in a concurrent request: a client retries
        if (res.status === 409 && /still being processed|concurrently/.test(text) && Date.now() < deadline) {
          await new Promise((r) => setTimeout(r, 100));
          continue;
        }
        if (res.status < 200 || res.status > 299) throw new Error(`create ${request.kind} ${request.idempotencyKey}: ${res.status} ${text}`);
        return { id: (JSON.parse(text) as { id: string }).id, replayed: res.headers.get("idempotent-replayed") === "true" };
      }
    };
    const created = await Promise.all(order.map(async (request) => ({ request, ...(await create(request)) })));
    const idOf = new Map<string, string>();
    for (const c of created) {
      const key = `${c.request.who.account}/${c.request.idempotencyKey}`;
      const earlier = idOf.get(key);
      if (earlier === undefined) idOf.set(key, c.id);
      else expect(c.id, `repeated key ${key}`).toBe(earlier);
    }
    expect(idOf.size).toBe(BOOKS + SUBTITLES);
    expect(new Set(idOf.values()).size).toBe(BOOKS + SUBTITLES);
    expect(created.filter((c) => c.replayed)).toHaveLength(REPEATED.length);
    phase("50 creates answered");
    const kindOf = new Map(distinct.map((r) => [idOf.get(`${r.who.account}/${r.idempotencyKey}`)!, r.kind]));

    // ---- every record of every account observed through the lists, every 250 ms, until all are done
    const seen = new Map<string, Observation[]>();
    const listed = new Map<string, Set<string>>();
    let pollErrors = 0;
    let polling = true;
    const pollOnce = async () => {
      await Promise.all(
        ACCOUNTS.flatMap((who) =>
          (["audiobook", "subtitle"] as const).map(async (kind) => {
            try {
              const res = await fetch(`${base}${PATHS[kind]}?limit=200`, { headers: { "API-KEY": who.key } });
              if (res.status !== 200) {
                pollErrors += 1;
                return;
              }
              const at = Date.now();
              const records = (await res.json()) as Array<{ id: string; task_status: string; task_progress: number }>;
              const ids = listed.get(`${who.account}/${kind}`) ?? new Set<string>();
              for (const r of records) {
                ids.add(r.id);
                const list = seen.get(r.id) ?? [];
                list.push({ at, status: r.task_status, progress: r.task_progress });
                seen.set(r.id, list);
              }
              listed.set(`${who.account}/${kind}`, ids);
            } catch {
              pollErrors += 1; // the gateway is restarting
            }
          }),
        ),
      );
    };
    const poller = (async () => {
      while (polling) {
        await pollOnce();
        await new Promise((r) => setTimeout(r, 250));
      }
    })();

    const latest = (id: string) => seen.get(id)?.at(-1);
    const idsOf = (kind: Kind) => [...kindOf].filter(([, k]) => k === kind).map(([id]) => id);
    const unfinished = (kind?: Kind) => [...kindOf].filter(([id, k]) => (kind === undefined || k === kind) && latest(id)?.status !== "completed" && latest(id)?.status !== "failed").map(([id]) => id);
    const waitUntil = async (what: string, condition: () => boolean, withinMs = 180_000) => {
      const deadline = Date.now() + withinMs;
      while (!condition()) {
        if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    };
    /** Progress (or completion) of any task of the kinds, observed after `since`, beyond what it had at `since`. */
    const movedSince = (since: number, kinds: Kind[]) => {
      return [...kindOf].some(([id, k]) => {
        if (!kinds.includes(k)) return false;
        const observations = seen.get(id) ?? [];
        const before = observations.filter((o) => o.at <= since).at(-1);
        return observations.some((o) => o.at > since && (o.progress > (before?.progress ?? 0) || (o.status === "completed" && before?.status !== "completed")));
      });
    };
    const resumeTimes: Array<{ fault: string; ms: number | null }> = [];
    const measureResume = async (fault: string, since: number, kinds: Kind[]) => {
      if (!kinds.some((k) => unfinished(k).length > 0)) {
        resumeTimes.push({ fault, ms: null });
        return;
      }
      await waitUntil(`work to resume after ${fault}`, () => movedSince(since, kinds) || !kinds.some((k) => unfinished(k).length > 0));
      resumeTimes.push({ fault, ms: Date.now() - since });
    };
    const inFlight = (kind: Kind) => idsOf(kind).some((id) => latest(id)?.status === "processing" && (latest(id)?.progress ?? 0) > 0);

    // ---- faults: each worker SIGKILLed while a task of its kind is under way, then restarted
    const killWorker = async (kind: Kind) => {
      await waitUntil(`a ${kind} task under way`, () => inFlight(kind));
      const at = Date.now();
      phase(`SIGKILL ${kind} worker (${unfinished(kind).length} of its tasks unfinished)`);
      const exit = await signalAndWait(running[kind], "SIGKILL");
      expect(exit.signal).toBe("SIGKILL");
      await start(kind);
      await measureResume(`SIGKILL of the ${kind} worker (restart included)`, at, [kind]);
    };
    await Promise.all([killWorker("audiobook"), killWorker("subtitle")]);

    // nats-server restarted on the same store directory
    await waitUntil("a task under way before the nats-server restart", () => inFlight("audiobook") || inFlight("subtitle") || unfinished().length === 0);
    const natsAt = Date.now();
    phase(`nats-server restart (${unfinished().length} tasks unfinished)`);
    await nats.restart();
    await measureResume("nats-server restart", natsAt, ["audiobook", "subtitle"]);

    // the gateway restarted (a rolling restart: SIGTERM, exit 0, start again)
    const gatewayAt = Date.now();
    phase(`gateway restart (${unfinished().length} tasks unfinished)`);
    const gatewayExit = await signalAndWait(running.gateway, "SIGTERM");
    expect({ code: gatewayExit.code, signal: gatewayExit.signal }).toEqual({ code: 0, signal: null });
    await start("gateway");
    await measureResume("gateway restart", gatewayAt, ["audiobook", "subtitle"]);

    // ---- every task completes
    await waitUntil("every task to finish", () => unfinished().length === 0, 240_000).catch((error: unknown) => {
      // what every process (killed ones included) logged about the tasks left behind
      const stuck = unfinished().map((id) => {
        const lines = procs.flatMap((p) => logLines(p).filter((l) => l.taskId === id).map((l) => `  ${p.services}:${p.child.pid} ${JSON.stringify(l)}`));
        return `${kindOf.get(id)} ${id}: ${JSON.stringify(latest(id))}\n${lines.slice(-20).join("\n")}`;
      });
      throw new Error(`${String(error)}\n${stuck.join("\n")}`);
    });
    phase("every task finished");
    polling = false;
    await poller;
    await pollOnce();

    for (const { fault, ms } of resumeTimes) {
      process.stdout.write(`[faults] time to resume after ${fault}: ${ms === null ? "no work left to resume" : `${(ms / 1000).toFixed(1)} s`}\n`);
    }
    process.stdout.write(`[faults] ${kindOf.size} tasks, ${[...seen.values()].reduce((n, o) => n + o.length, 0)} observations, ${pollErrors} polls refused while the gateway restarted\n`);

    // none lost: every task completed, with its file
    const failed = [...kindOf.keys()].filter((id) => latest(id)?.status !== "completed").map((id) => `${id}: ${JSON.stringify(latest(id))}`);
    expect(failed).toEqual([]);
    // no duplicates: each list holds exactly the records created for its account and kind
    for (const who of ACCOUNTS) {
      for (const kind of ["audiobook", "subtitle"] as const) {
        const expected = distinct.filter((r) => r.kind === kind && r.who === who).map((r) => idOf.get(`${who.account}/${r.idempotencyKey}`)!);
        const res = await fetch(`${base}${PATHS[kind]}?limit=200`, { headers: { "API-KEY": who.key } });
        const records = (await res.json()) as Array<{ id: string; task_status: string; localized_file: string | null }>;
        expect(records.map((r) => r.id).sort(), `${who.account} ${kind}`).toEqual([...expected].sort());
        expect([...(listed.get(`${who.account}/${kind}`) ?? [])].sort()).toEqual([...expected].sort());
        for (const record of records) {
          const file = await fetch(String(record.localized_file));
          expect(file.status, `${kind} ${record.id}`).toBe(200);
          expect((await file.arrayBuffer()).byteLength).toBeGreaterThan(1_000);
        }
      }
    }
    // progress never backwards, on any observation
    const drops = [...seen].flatMap(([id, observations]) =>
      observations.flatMap((o, i) => {
        const before = observations.slice(0, i);
        const highest = Math.max(0, ...before.map((b) => b.progress));
        const wasDone = before.some((b) => b.status === "completed");
        return o.progress < highest || (wasDone && o.status !== "completed") ? [`${id} #${i}: ${o.status} ${o.progress} after ${highest}`] : [];
      }),
    );
    expect(drops).toEqual([]);
    // the workers did resume killed tasks: some delivery after the first
    expect(resumeTimes.filter((r) => r.fault.startsWith("SIGKILL")).every((r) => r.ms !== null)).toBe(true);
  }, 420_000);
});
