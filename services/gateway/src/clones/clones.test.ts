/**
 * Cloned voices through the gateway: `/v1/voices/clones` (made and deleted by a stand-in synthesis
 * service on the real bus, answering as the catalogue says), `clone:<id>` resolved to the caller's own
 * clone for synthesis, audio books and voice streams (the descriptor reaches the synthesis request and
 * the work messages the workers receive), the contract's `use_voice_clone` fields, tenant and sandbox
 * separation, the sample's refusals and engine trouble, idempotent replay, paging, and the voice list.
 */
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import {
  type Capabilities,
  type CloneCreateRequest,
  type CloneDeleteRequest,
  type CloneErrorCode,
  type SynthesizeRequest,
  type WorkMessage,
} from "@voiceloc/contracts";
import { makeToneWav, tempDir } from "@voiceloc/testing";
import { ALICE_KEY, BASE, BOB_KEY, startTestGateway, type TestGateway } from "../testing/harness.ts";
import { startWithStandInWorkers, type StandInWorkers } from "../testing/stand-in-workers.ts";
import { NO_SAMPLE } from "../records/audio-books.ts";
import { CLONING_OFF } from "./maker.ts";

/** Words a refusing engine puts in its message; engine trouble must never reach the client with them. */
const ENGINE_WORDS = "xi-api-key sk_live_abcdef at https://api.elevenlabs.io/v1/voices/add: 500";

/** What the stand-in refuses, by a word in the sample reference (the real service decides from the audio). */
const REFUSALS: Record<string, { code: CloneErrorCode; message: string }> = {
  short: { code: "sample_unusable", message: "the sample has 1.4 s of sound; a voice is cloned from 3 s to 5 min of speech" },
  silent: { code: "sample_unusable", message: "the sample is silent: there is no speech to clone" },
  gone: { code: "sample_not_available", message: "file not available: the sample could not be fetched" },
  off: { code: "cloning_unavailable", message: "CLONE_ENGINE=off" },
  down: { code: "engine_unavailable", message: ENGINE_WORDS },
  busy: { code: "engine_busy", message: ENGINE_WORDS },
  broken: { code: "engine_failed", message: ENGINE_WORDS },
};

const PROFILE = { median_pitch_hz: 182.5, pitch_low_hz: 140.1, pitch_high_hz: 240.3, syllables_per_second: 4.2 };

let t: TestGateway;
let origin: string;
let media: { path: string };
let sandboxKey: string;
let mesh: StandInWorkers;

/** What the stand-in was asked, in order. */
const creates: CloneCreateRequest[] = [];
const deletes: CloneDeleteRequest[] = [];
const syntheses: SynthesizeRequest[] = [];
/** The engine the stand-in answers with next; `deleteFails` makes its deletions unreachable. */
const standIn = { engine: "elevenlabs" as "elevenlabs" | "voice-library" | "match", deleteFails: false };

beforeAll(async () => {
  mesh = await startWithStandInWorkers({
    prefix: "voiceloc-clones-media-",
    voices: [
      { name: "flite:slt", language: "English", engine: "flite", gender: "female", description: "a preset", default: true },
      { name: "espeak:es", language: "Spanish", engine: "espeak-ng", gender: null, description: "a preset", default: true },
    ],
    serve: async (bus) => [
      await bus.serve("clone.create", (request, ctx) => {
        creates.push(request);
        const word = Object.keys(REFUSALS).find((w) => request.sample.includes(w));
        if (word) return ctx.refuse(REFUSALS[word]!.code, REFUSALS[word]!.message);
        if (request.sample.includes("crash")) throw new Error(`engine exploded: ${ENGINE_WORDS}`);
        const ref = standIn.engine === "match" ? "flite:slt" : `${standIn.engine}-${request.id.slice(0, 8)}`;
        return { engine: standIn.engine, ref, profile: PROFILE, sample_seconds: 12.5, languages: ["English", "Spanish"] };
      }),
      await bus.serve("clone.delete", (request, ctx) => {
        deletes.push(request);
        if (standIn.deleteFails) return ctx.refuse("engine_unavailable", ENGINE_WORDS);
        return { deleted: true };
      }),
      await bus.serve("synthesize", (request) => {
        syntheses.push(request);
        return { key: `speech/stand-in/${syntheses.length}.mp3`, duration_seconds: 1.5, voice: request.voice ?? "stand-in" };
      }),
    ],
  });
  ({ t, origin, sandboxKey } = mesh);
  media = { path: mesh.mediaRoot };
});

afterAll(async () => {
  await mesh?.close();
});

beforeEach(() => {
  standIn.engine = "elevenlabs";
  standIn.deleteFails = false;
});

interface CloneBody {
  id: string;
  name: string;
  voice: string;
  engine: string;
  sample_seconds: number;
  languages: string[];
  date_created: string;
}
interface Item422 {
  type: string;
  loc: Array<string | number>;
  msg: string;
  input: unknown;
}

const json = async <T>(res: Response): Promise<T> => (await res.json()) as T;
const makeClone = (body: Record<string, unknown>, key: string = ALICE_KEY, headers: Record<string, string> = {}) =>
  t.request("POST", "/v1/voices/clones", { body, key, headers });

async function clone(name = "Ana", key: string = ALICE_KEY): Promise<CloneBody> {
  const res = await makeClone({ name, sample: "https://example.com/ana.wav", language: "Spanish" }, key);
  expect(res.status).toBe(201);
  return json<CloneBody>(res);
}

async function eventually<T>(read: () => T | Promise<T>, ok: (value: T) => boolean, what: string): Promise<T> {
  const deadline = Date.now() + 20_000;
  let last = await read();
  while (!ok(last)) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; last: ${JSON.stringify(last)}`);
    await new Promise((r) => setTimeout(r, 25));
    last = await read();
  }
  return last;
}

const workFor = (id: string) => eventually(() => mesh.work.find((w) => w.task_id === id), (w) => w !== undefined, `the work message of ${id}`) as Promise<WorkMessage>;

describe("POST /v1/voices/clones", () => {
  it("makes the voice at the service while the request waits, and answers 201 with the clone and its Location", async () => {
    const before = creates.length;
    const res = await makeClone({ name: "Narrator (Ana)", sample: "https://example.com/ana.wav", language: "Spanish" });
    expect(res.status).toBe(201);
    const body = await json<CloneBody>(res);
    expect(body).toEqual({
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      name: "Narrator (Ana)",
      voice: `clone:${body.id}`,
      engine: "elevenlabs",
      sample_seconds: 12.5,
      languages: ["English", "Spanish"],
      date_created: expect.any(String),
    });
    expect(res.headers.get("location")).toBe(`/v1/voices/clones/${body.id}`);
    expect(creates.length).toBe(before + 1);
    expect(creates.at(-1)).toMatchObject({ id: body.id, name: "Narrator (Ana)", sample: "https://example.com/ana.wav", language: "Spanish", account_id: "alice" });

    const read = await t.request("GET", `/v1/voices/clones/${body.id}`);
    expect(read.status).toBe(200);
    expect(await read.json()).toEqual(body);
  });

  it("takes a MEDIA_ROOT path and an audio upload as the sample, and refuses a text upload or a path outside the root without asking the service", async () => {
    const wav = await makeToneWav(4, join(media.path, "ana.wav"), { frequency: 180 });
    expect((await makeClone({ name: "From media", sample: "ana.wav" })).status).toBe(201);

    const upload = async (body: Buffer | string, type: string) =>
      json<{ file: string }>(
        await t.gateway.app.request(`${BASE}/v1/uploads`, { method: "POST", headers: { "API-KEY": ALICE_KEY, "Content-Type": type }, body }),
      );
    const audio = await upload(await readFile(wav), "audio/wav");
    expect((await makeClone({ name: "From upload", sample: audio.file })).status).toBe(201);
    expect(creates.at(-1)?.sample).toBe(audio.file);

    const before = creates.length;
    const text = await upload("just words, no voice here", "text/plain");
    const refused = await makeClone({ name: "Text", sample: text.file });
    expect(refused.status).toBe(422);
    expect((await json<{ detail: Item422[] }>(refused)).detail[0]).toMatchObject({ loc: ["body", "sample"], msg: expect.stringContaining("this field takes audio"), input: text.file });
    // bob cannot use alice's upload
    const foreign = await makeClone({ name: "Foreign", sample: audio.file }, BOB_KEY);
    expect(foreign.status).toBe(422);
    expect((await json<{ detail: Item422[] }>(foreign)).detail[0]?.loc).toEqual(["body", "sample"]);
    const outside = await makeClone({ name: "Outside", sample: "../etc/passwd" });
    expect(outside.status).toBe(422);
    expect((await json<{ detail: Item422[] }>(outside)).detail[0]?.loc).toEqual(["body", "sample"]);
    expect(creates.length).toBe(before);
  });

  it("validates the body as the other bodies are (Pydantic-shaped 422s)", async () => {
    const before = creates.length;
    const empty = await makeClone({ name: "", sample: "https://example.com/a.wav" });
    expect(empty.status).toBe(422);
    expect((await json<{ detail: Item422[] }>(empty)).detail[0]).toMatchObject({ type: "string_too_short", loc: ["body", "name"] });
    const long = await makeClone({ name: "n".repeat(101), sample: "https://example.com/a.wav" });
    expect((await json<{ detail: Item422[] }>(long)).detail[0]).toMatchObject({ type: "string_too_long", loc: ["body", "name"] });
    const missing = await makeClone({ name: "No sample" });
    expect((await json<{ detail: Item422[] }>(missing)).detail[0]).toMatchObject({ type: "missing", loc: ["body", "sample"] });
    const language = await makeClone({ name: "Klingon", sample: "https://example.com/a.wav", language: "Klingon" });
    expect((await json<{ detail: Item422[] }>(language)).detail[0]).toMatchObject({ type: "enum", loc: ["body", "language"] });
    expect(creates.length).toBe(before);
  });

  const sampleRefusals = Object.entries(REFUSALS).filter(([, r]) => r.code.startsWith("sample_"));
  it.each(sampleRefusals)("answers a '%s' sample as a 422 at body.sample in the service's words, storing nothing", async (word, refusal) => {
    const before = await json<CloneBody[]>(await t.request("GET", "/v1/voices/clones?limit=200"));
    const sample = `https://example.com/${word}.wav`;
    const res = await makeClone({ name: "Bad", sample });
    expect(res.status).toBe(422);
    expect(await res.json()).toEqual({ detail: [{ type: "value_error", loc: ["body", "sample"], msg: `Value error, ${refusal.message}`, input: sample, ctx: { error: {} } }] });
    expect(await json<CloneBody[]>(await t.request("GET", "/v1/voices/clones?limit=200"))).toEqual(before);
  });

  it("answers a server that makes no clones (CLONE_ENGINE=off) as a 422 at body.sample saying so", async () => {
    const res = await makeClone({ name: "Off", sample: "https://example.com/off.wav" });
    expect(res.status).toBe(422);
    expect((await json<{ detail: Item422[] }>(res)).detail[0]).toMatchObject({ loc: ["body", "sample"], msg: `Value error, ${CLONING_OFF}` });
  });

  it.each([
    ["down", 503],
    ["busy", 503],
    ["broken", 502],
    ["crash", 502],
  ] as const)("answers engine trouble ('%s') as a %i in fixed plain words, never the engine's, and stores nothing", async (word, status) => {
    const before = (await json<CloneBody[]>(await t.request("GET", "/v1/voices/clones?limit=200"))).length;
    const res = await makeClone({ name: "Trouble", sample: `https://example.com/${word}.wav` });
    expect(res.status).toBe(status);
    const body = await json<{ detail: string }>(res);
    expect(body.detail).toMatch(/^Voice cloning [a-z ]+[:.]/);
    expect(body.detail).not.toMatch(/sk_live|xi-api-key|elevenlabs\.io|exploded/);
    expect(res.headers.get("retry-after") ?? "none").toMatch(status === 503 ? /^\d+$/ : /^none$/);
    expect((await json<CloneBody[]>(await t.request("GET", "/v1/voices/clones?limit=200"))).length).toBe(before);
  });

  it("replays an Idempotency-Key's first answer without making a second voice, and refuses the key with another body", async () => {
    const before = creates.length;
    const body = { name: "Once", sample: "https://example.com/once.wav" };
    const first = await makeClone(body, ALICE_KEY, { "Idempotency-Key": "clone-once" });
    expect(first.status).toBe(201);
    const again = await makeClone(body, ALICE_KEY, { "Idempotency-Key": "clone-once" });
    expect(again.status).toBe(201);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(again.headers.get("location")).toBe(first.headers.get("location"));
    expect(await again.json()).toEqual(await first.json());
    expect(creates.length).toBe(before + 1);
    const other = await makeClone({ ...body, name: "Twice" }, ALICE_KEY, { "Idempotency-Key": "clone-once" });
    expect(other.status).toBe(409);
    // a refused creation releases its key: the same key may be used again once the sample is good
    const refused = await makeClone({ name: "Retry", sample: "https://example.com/short.wav" }, ALICE_KEY, { "Idempotency-Key": "clone-retry" });
    expect(refused.status).toBe(422);
    const retried = await makeClone({ name: "Retry", sample: "https://example.com/short.wav" }, ALICE_KEY, { "Idempotency-Key": "clone-retry" });
    expect(retried.status).toBe(422);
    expect(retried.headers.get("idempotent-replayed")).toBeNull();
  });
});

describe("GET /v1/voices/clones", () => {
  it("pages newest first with limit, cursor and the Link header; a bad cursor is a 422", async () => {
    const made = [await clone("Page 1"), await clone("Page 2"), await clone("Page 3")];
    const first = await t.request("GET", "/v1/voices/clones?limit=2");
    expect(first.status).toBe(200);
    const page1 = await json<CloneBody[]>(first);
    expect(page1.map((c) => c.id)).toEqual([made[2]!.id, made[1]!.id]);
    const link = first.headers.get("link") ?? "";
    const next = /^<([^>]+)>; rel="next"$/.exec(link)?.[1];
    expect(next).toMatch(/^http:\/\/api\.test\/v1\/voices\/clones\?limit=2&cursor=/);
    const page2 = await json<CloneBody[]>(await t.request("GET", next!.slice(BASE.length)));
    expect(page2[0]?.id).toBe(made[0]!.id);
    const bad = await t.request("GET", "/v1/voices/clones?cursor=not-a-cursor");
    expect(bad.status).toBe(422);
    expect((await json<{ detail: Item422[] }>(bad)).detail[0]?.loc).toEqual(["query", "cursor"]);
    expect((await t.request("GET", "/v1/voices/clones?limit=0")).status).toBe(422);
  });
});

describe("tenants and the sandbox", () => {
  it("keeps alice's clone hers: bob cannot see, use or delete it", async () => {
    const ana = await clone("Alice's voice");
    expect((await t.request("GET", `/v1/voices/clones/${ana.id}`, { key: BOB_KEY })).status).toBe(404);
    expect(await json(await t.request("GET", `/v1/voices/clones/${ana.id}`, { key: BOB_KEY }))).toEqual({ detail: "Cloned voice not found" });
    expect((await json<CloneBody[]>(await t.request("GET", "/v1/voices/clones", { key: BOB_KEY }))).map((c) => c.id)).not.toContain(ana.id);
    const deletesBefore = deletes.length;
    expect((await t.request("DELETE", `/v1/voices/clones/${ana.id}`, { key: BOB_KEY })).status).toBe(404);
    expect(deletes.length).toBe(deletesBefore);
    expect((await t.request("GET", `/v1/voices/clones/${ana.id}`)).status).toBe(200);

    // using it: the same 422 at the field as a clone that does not exist
    const unknown = "clone:0193f1c2-a7b4-7cc2-a1f0-4e4ab2b1a4d0";
    const synthesisOf = async (voice: string) =>
      json<{ detail: Item422[] }>(await t.request("POST", "/v1/speech/synthesize", { key: BOB_KEY, body: { text: "Hola", language: "Spanish", voice } }));
    const foreign = await synthesisOf(ana.voice);
    const missing = await synthesisOf(unknown);
    expect(foreign.detail[0]).toMatchObject({ loc: ["body", "voice"], input: ana.voice });
    expect(foreign.detail[0]?.msg).toBe(missing.detail[0]?.msg.replace(unknown, ana.voice));
    expect(foreign.detail[0]?.msg).toMatch(/^Value error, unknown voice 'clone:/);

    const book = await t.request("POST", "/v1/audio_books/", {
      key: BOB_KEY,
      body: { file: "https://example.com/b.txt", name: "B", source_language: "English", target_language: "Spanish", preset_voice_name: ana.voice },
    });
    expect(book.status).toBe(422);
    expect((await json<{ detail: Item422[] }>(book)).detail[0]).toMatchObject({ loc: ["body", "preset_voice_name"], input: ana.voice });
    const stream = await t.request("POST", "/v1/voices/streams", {
      key: BOB_KEY,
      body: { file: "https://example.com/t.wav", source_language: "English", target_language: "Spanish", voice: ana.voice },
    });
    expect(stream.status).toBe(422);
    expect((await json<{ detail: Item422[] }>(stream)).detail[0]).toMatchObject({ loc: ["body", "voice"], input: ana.voice });
    // nor do alice's clones appear in bob's voice list
    const voices = await json<Array<{ name: string }>>(await t.request("GET", "/v1/voices", { key: BOB_KEY }));
    expect(voices.map((v) => v.name)).not.toContain(ana.voice);
  });

  it("gives a sandbox key a space of its own, apart from the same account's live clones", async () => {
    const live = await clone("Live voice");
    const sandbox = await clone("Sandbox voice", sandboxKey);
    expect(creates.at(-1)?.account_id).toBe("sandbox:alice");
    const sandboxList = (await json<CloneBody[]>(await t.request("GET", "/v1/voices/clones?limit=200", { key: sandboxKey }))).map((c) => c.id);
    const liveList = (await json<CloneBody[]>(await t.request("GET", "/v1/voices/clones?limit=200"))).map((c) => c.id);
    expect(sandboxList).toEqual([sandbox.id]);
    expect(liveList).toContain(live.id);
    expect(liveList).not.toContain(sandbox.id);
    expect((await t.request("GET", `/v1/voices/clones/${live.id}`, { key: sandboxKey })).status).toBe(404);
    const used = await t.request("POST", "/v1/speech/synthesize", { key: sandboxKey, body: { text: "Hi", language: "English", voice: live.voice } });
    expect(used.status).toBe(422);
    const own = await t.request("POST", "/v1/speech/synthesize", { key: sandboxKey, body: { text: "Hi", language: "English", voice: sandbox.voice } });
    expect(own.status).toBe(200);
  });
});

describe("clone:<id> wherever a voice is named", () => {
  it("puts the caller's clone in the synthesis request, and refuses a language it does not speak", async () => {
    const ana = await clone("Speaker");
    const res = await t.request("POST", "/v1/speech/synthesize", { body: { text: "Hola a todos", language: "es", voice: ana.voice } });
    expect(res.status).toBe(200);
    expect(syntheses.at(-1)).toMatchObject({
      text: "Hola a todos",
      language: "Spanish",
      voice: ana.voice,
      clone: { id: ana.id, name: "Speaker", engine: "elevenlabs", ref: `elevenlabs-${ana.id.slice(0, 8)}`, profile: PROFILE },
      account_id: "alice",
    });
    const before = syntheses.length;
    const french = await t.request("POST", "/v1/speech/synthesize", { body: { text: "Bonjour", language: "French", voice: ana.voice } });
    expect(french.status).toBe(422);
    expect((await json<{ detail: Item422[] }>(french)).detail[0]).toMatchObject({ loc: ["body", "voice"], msg: `Value error, cloned voice '${ana.voice}' speaks English, Spanish, not French` });
    expect(syntheses.length).toBe(before);
    // a preset voice travels without a clone, as before
    expect((await t.request("POST", "/v1/speech/synthesize", { body: { text: "Hello", language: "en", voice: "flite:slt" } })).status).toBe(200);
    expect(syntheses.at(-1)?.clone ?? null).toBeNull();
  });

  it("carries the clone in an audio book's work message, past a capability table that lists only preset voices", async () => {
    const ana = await clone("Book voice");
    const table: Capabilities = {
      synthesis: { languages: ["English", "Spanish"] },
      recognition: { languages: ["English"] },
      translation: { pairs: [{ source: "English", target: "Spanish", pivot: null, quality: "rule-based" }] },
      cloning: { available: true, languages: ["English", "Spanish"] },
      voices: [{ name: "espeak:es", language: "Spanish", engine: "espeak-ng", gender: null, description: "a preset", default: true }],
    };
    const saved = t.gateway.deps.capabilities;
    t.gateway.deps.capabilities = { get: async () => table };
    try {
      const res = await t.request("POST", "/v1/audio_books/", {
        body: { file: "https://example.com/b.txt", name: "Cloned book", source_language: "English", target_language: "Spanish", preset_voice_name: ana.voice },
      });
      expect(res.status).toBe(201);
      const { id } = await json<{ id: string }>(res);
      expect(await workFor(id)).toMatchObject({
        kind: "audiobook",
        preset_voice_name: ana.voice,
        use_voice_clone: false,
        clone: { id: ana.id, engine: "elevenlabs", ref: `elevenlabs-${ana.id.slice(0, 8)}`, profile: PROFILE },
      });
      // use_voice_clone passes while the workers' table says cloning is available, and is refused when it says not
      const withSample = await t.request("POST", "/v1/audio_books/", {
        body: { file: "https://example.com/b.txt", name: "Sampled", source_language: "English", target_language: "Spanish", use_voice_clone: true, voice_clone_sample: "https://example.com/v.wav" },
      });
      expect(withSample.status).toBe(201);
      const sampled = await workFor((await json<{ id: string }>(withSample)).id);
      expect(sampled).toMatchObject({ use_voice_clone: true, voice_clone_sample: "https://example.com/v.wav", clone: null });
      table.cloning = { available: false, languages: [] };
      const noCloning = await t.request("POST", "/v1/audio_books/", {
        body: { file: "https://example.com/b.txt", name: "Sampled", source_language: "English", target_language: "Spanish", use_voice_clone: true, voice_clone_sample: "https://example.com/v.wav" },
      });
      expect(noCloning.status).toBe(422);
      expect((await json<{ detail: Item422[] }>(noCloning)).detail[0]?.loc).toEqual(["body", "use_voice_clone"]);
    } finally {
      t.gateway.deps.capabilities = saved;
    }
  });

  it("refuses an audio book with use_voice_clone and no voice_clone_sample with a 422 at voice_clone_sample", async () => {
    for (const sample of [undefined, null]) {
      const res = await t.request("POST", "/v1/audio_books/", {
        body: { file: "https://example.com/b.txt", name: "No sample", source_language: "English", target_language: "Spanish", use_voice_clone: true, ...(sample === null ? { voice_clone_sample: null } : {}) },
      });
      expect(res.status).toBe(422);
      expect(await res.json()).toEqual({
        detail: [{ type: "value_error", loc: ["body", "voice_clone_sample"], msg: `Value error, ${NO_SAMPLE}`, input: null, ctx: { error: {} } }],
      });
    }
  });

  it("carries a voice stream's clone, use_voice_clone and sample in its work message; without a sample it clones the input's speech", async () => {
    const ana = await clone("Stream voice");
    const named = await t.request("POST", "/v1/voices/streams", {
      body: { file: "https://example.com/t.wav", source_language: "English", target_language: "Spanish", voice: ana.voice },
    });
    expect(named.status).toBe(201);
    expect(await workFor((await json<{ id: string }>(named)).id)).toMatchObject({
      kind: "voice-stream",
      voice: ana.voice,
      clone: { id: ana.id, engine: "elevenlabs" },
      use_voice_clone: false,
      voice_clone_sample: null,
    });
    const own = await t.request("POST", "/v1/voices/streams", {
      body: { file: "https://example.com/t.wav", source_language: "English", target_language: "Spanish", use_voice_clone: true },
    });
    expect(own.status).toBe(201);
    expect(await workFor((await json<{ id: string }>(own)).id)).toMatchObject({ use_voice_clone: true, voice_clone_sample: null, clone: null });
    const sampled = await t.request("POST", "/v1/voices/streams", {
      body: { file: "https://example.com/t.wav", source_language: "English", target_language: "Spanish", use_voice_clone: true, voice_clone_sample: "https://example.com/v.wav" },
    });
    expect(sampled.status).toBe(201);
    expect(await workFor((await json<{ id: string }>(sampled)).id)).toMatchObject({ use_voice_clone: true, voice_clone_sample: "https://example.com/v.wav" });
    const outside = await t.request("POST", "/v1/voices/streams", {
      body: { file: "https://example.com/t.wav", source_language: "English", target_language: "Spanish", use_voice_clone: true, voice_clone_sample: "../secret.wav" },
    });
    expect(outside.status).toBe(422);
    expect((await json<{ detail: Item422[] }>(outside)).detail[0]?.loc).toEqual(["body", "voice_clone_sample"]);
  });
});

describe("GET /v1/voices", () => {
  it("lists the caller's clones once per language they speak, with the engine, and says a match voice is not a clone", async () => {
    const eleven = await clone("Eleven");
    standIn.engine = "match";
    const matched = await clone("Matched");
    const voices = await json<Array<{ name: string; language: string; engine: string; description: string; default: boolean }>>(await t.request("GET", "/v1/voices"));
    expect(voices.slice(0, 2).map((v) => v.name)).toEqual(["flite:slt", "espeak:es"]);
    const of = (name: string) => voices.filter((v) => v.name === name);
    expect(of(eleven.voice).map((v) => [v.language, v.engine, v.default])).toEqual([
      ["English", "elevenlabs", false],
      ["Spanish", "elevenlabs", false],
    ]);
    expect(of(eleven.voice)[0]?.description).toMatch(/Eleven.*a clone of the sample's voice/);
    expect(of(matched.voice)[0]?.engine).toBe("match");
    expect(of(matched.voice)[0]?.description).toContain("an approximation of the sample's pitch and rate with an installed voice, not a clone of the voice");
    const spanish = await json<Array<{ name: string; language: string }>>(await t.request("GET", "/v1/voices?language=es"));
    expect(spanish.every((v) => v.language === "Spanish")).toBe(true);
    expect(spanish.filter((v) => v.name === matched.voice)).toHaveLength(1);
  });
});

describe("DELETE /v1/voices/clones/{id}", () => {
  it("deletes the voice at its engine, then the record: 204, then 404, and the voice is unknown", async () => {
    const ana = await clone("To delete");
    const res = await t.request("DELETE", `/v1/voices/clones/${ana.id}`);
    expect(res.status).toBe(204);
    expect(await res.text()).toBe("");
    expect(deletes.at(-1)).toMatchObject({ clone: { id: ana.id, engine: "elevenlabs", ref: `elevenlabs-${ana.id.slice(0, 8)}` }, account_id: "alice" });
    expect((await t.request("GET", `/v1/voices/clones/${ana.id}`)).status).toBe(404);
    expect((await t.request("DELETE", `/v1/voices/clones/${ana.id}`)).status).toBe(404);
    const used = await t.request("POST", "/v1/speech/synthesize", { body: { text: "Hi", language: "English", voice: ana.voice } });
    expect(used.status).toBe(422);
  });

  it("keeps the clone when its engine cannot be reached (503), so nothing is left at the engine unseen", async () => {
    const ana = await clone("Unreachable");
    standIn.deleteFails = true;
    const res = await t.request("DELETE", `/v1/voices/clones/${ana.id}`);
    expect(res.status).toBe(503);
    expect(res.headers.get("retry-after")).toMatch(/^\d+$/);
    expect((await json<{ detail: string }>(res)).detail).not.toContain("sk_live");
    expect((await t.request("GET", `/v1/voices/clones/${ana.id}`)).status).toBe(200);
    standIn.deleteFails = false;
    expect((await t.request("DELETE", `/v1/voices/clones/${ana.id}`)).status).toBe(204);
  });

  it("deletes a match voice without asking an engine (it has nothing there)", async () => {
    standIn.engine = "match";
    const matched = await clone("Match only");
    const before = deletes.length;
    expect((await t.request("DELETE", `/v1/voices/clones/${matched.id}`)).status).toBe(204);
    expect(deletes.length).toBe(before);
  });

  it("answers an id that is not a UUID with a 422 at the path", async () => {
    const res = await t.request("DELETE", "/v1/voices/clones/nope");
    expect(res.status).toBe(422);
    expect((await json<{ detail: Item422[] }>(res)).detail[0]?.loc).toEqual(["path", "clone_id"]);
  });
});

describe("over the wire", () => {
  it("creates, reads, lists and deletes a clone through the listening gateway", async () => {
    const headers = { "API-KEY": ALICE_KEY, "Content-Type": "application/json" };
    const created = await fetch(`${origin}/v1/voices/clones`, { method: "POST", headers, body: JSON.stringify({ name: "Wire", sample: "https://example.com/w.wav" }) });
    expect(created.status).toBe(201);
    const body = await json<CloneBody>(created);
    expect(created.headers.get("location")).toBe(`/v1/voices/clones/${body.id}`);
    expect((await fetch(`${origin}/v1/voices/clones/${body.id}`, { headers })).status).toBe(200);
    const list = await json<CloneBody[]>(await fetch(`${origin}/v1/voices/clones?limit=1`, { headers }));
    expect(list[0]?.id).toBe(body.id);
    expect((await fetch(`${origin}/v1/voices/clones/${body.id}`, { method: "DELETE", headers })).status).toBe(204);
    expect((await fetch(`${origin}/v1/voices/clones/${body.id}`, { headers })).status).toBe(404);
  });
});

describe("without a synthesis service", () => {
  it("answers a creation 503 (nothing stored) and still lists and reads", async () => {
    const dir = await tempDir("voiceloc-clones-nobus-");
    const alone = await startTestGateway({}, {}, dir.path);
    try {
      const res = await alone.request("POST", "/v1/voices/clones", { body: { name: "Nobody", sample: "https://example.com/a.wav" } });
      expect(res.status).toBe(503);
      expect((await json<{ detail: string }>(res)).detail).toMatch(/no synthesis service/);
      const list = await alone.request("GET", "/v1/voices/clones");
      expect(list.status).toBe(200);
      expect(await list.json()).toEqual([]);
    } finally {
      await alone.close();
      await dir.cleanup();
    }
  });
});
