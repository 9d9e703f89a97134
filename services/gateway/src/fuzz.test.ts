/**
 * Schema-driven fuzzing of the whole HTTP surface on a listening gateway (so record reads meet the fast
 * path in front of the app, as in production): requests for every operation in `/openapi.json` (plus
 * signed downloads and the service endpoints), built from the operation's own parameter and body schemas
 * and mixed with hostile values. Every answer must be < 500 and every error body must have the documented
 * shape. A request Node's HTTP server refuses itself (a header section over 16 KB) is also sent to the app
 * in process, so its handling of huge fields stays covered. Seeded and bounded: the same requests on every
 * run. The test prints how many requests it tried.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import fc from "fast-check";
import { SignJWT } from "jose";
import { z } from "zod";
import { LANGUAGES, type Capabilities } from "@voiceloc/contracts";
import { createFsBlobStore, signBlobUrl } from "@voiceloc/blobs";
import { tempDir } from "@voiceloc/testing";
import { ALICE_KEY, BASE, BOB_KEY, JWT_SECRET, startTestGateway, type TestGateway } from "./testing/harness.ts";

const SEED = 20261123;
const RUNS = 6000;
const SIGNING_SECRET = "fuzz-signing-secret-that-is-long-enough-0123";

type Schema = Record<string, any>;
interface Operation {
  method: string;
  path: string;
  parameters: Array<{ name: string; in: "path" | "query" | "header"; required?: boolean; schema: Schema }>;
  body?: Schema | undefined;
  /** A known-good query (a signed download's `expires` and `signature`). */
  query?: string;
}
interface FuzzRequest {
  op: number;
  method: string;
  url: string;
  headers: Array<[string, string]>;
  body?: string | Uint8Array | undefined;
}

/* ----------------------------------------------------------- error shapes */

const ValidationBody = z
  .object({
    detail: z
      .array(
        z
          .object({
            type: z.string().min(1),
            loc: z.array(z.union([z.string(), z.number().int()])).min(1),
            msg: z.string().min(1),
            input: z.unknown().optional(),
            ctx: z.record(z.string(), z.unknown()).optional(),
          })
          .strict(),
      )
      .min(1),
  })
  .strict();
const ErrorBody = z.object({ detail: z.string().min(1) }).strict();

/* --------------------------------------------------------- hostile values */

// Deeper values (thousands of levels) are written as raw body text below: JSON.stringify itself recurses.
const DEEP = [63, 64, 65, 200];
const nest = (depth: number, kind: "array" | "object"): unknown => {
  let v: unknown = 1;
  for (let i = 0; i < depth; i++) v = kind === "array" ? [v] : { a: v };
  return v;
};

const hostileString = fc.oneof(
  fc.string({ unit: "binary", maxLength: 40 }),
  fc.constantFrom(
    "",
    " ",
    "\u0000",
    "\ud800",
    "\udfff",
    "a\ud800b",
    "\u202eevil\u202c",
    "\u2066\u2067\u2068\u2069",
    "\u200b\u200d\ufeff",
    "\r\nX-Injected: 1",
    "%",
    "%E0%A4%A",
    "%ED%A0%80",
    "../../etc/passwd",
    "file:///etc/passwd",
    "http://127.0.0.1/a.wav",
    "http://[::ffff:169.254.169.254]/",
    "http://2130706433/",
    "s3://bucket/key.wav",
    "gs://bucket/key.wav",
    "javascript:alert(1)",
    "__proto__",
    "constructor",
    "NaN",
    "Infinity",
    "1e999",
    "-0",
    "true",
    "null",
    "{}",
    "日本語のテキスト",
    "مرحبا بالعالم",
    "e\u0301\u0301\u0301",
  ),
  fc.constantFrom(1_000, 5_001, 70_000).map((n) => "x".repeat(n)),
);

const hostileNumber = fc.oneof(
  fc.constantFrom(0, -0, -1, 1e308, -1e308, Number.MAX_SAFE_INTEGER + 2, -Number.MAX_SAFE_INTEGER - 2, 5e-324, 2 ** 31, 2 ** 63, 0.5),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.integer(),
);

const hostileValue: fc.Arbitrary<unknown> = fc.oneof(
  hostileString,
  hostileNumber,
  fc.constantFrom(null, true, false, [], {}, [null], { "": "" }),
  fc.constantFrom(...DEEP).chain((d) => fc.constantFrom(nest(d, "array"), nest(d, "object"))),
  fc.jsonValue({ maxDepth: 3 }),
);

/* -------------------------------------------------- schema → arbitraries */

function resolve(schema: Schema, doc: Schema): Schema {
  let s = schema;
  while (typeof s.$ref === "string") s = doc.components.schemas[s.$ref.replace("#/components/schemas/", "")] as Schema;
  return s;
}

/** Values valid for the schema (as far as a schema can say), with known-good examples mixed in. */
function validFor(schema: Schema, doc: Schema, pools: Pools): fc.Arbitrary<unknown> {
  const s = resolve(schema, doc);
  if (Array.isArray(s.enum)) return fc.constantFrom(...(s.enum as unknown[]));
  const types: string[] = Array.isArray(s.type) ? s.type : [s.type ?? "string"];
  const arbs = types.map((type): fc.Arbitrary<unknown> => {
    switch (type) {
      case "null":
        return fc.constant(null);
      case "boolean":
        return fc.boolean();
      case "integer":
        return fc.integer({ min: s.minimum ?? -1000, max: s.maximum ?? 1000 });
      case "number":
        return fc.double({ min: s.minimum ?? -1e6, max: s.maximum ?? 1e6, noNaN: true });
      case "array":
        return fc.array(validFor(s.items ?? {}, doc, pools), { maxLength: 3 });
      case "object": {
        const props = (s.properties ?? {}) as Record<string, Schema>;
        const shape = Object.fromEntries(Object.entries(props).map(([k, v]) => [k, field(k, v, doc, pools)]));
        return fc.record(shape, { requiredKeys: (s.required ?? []) as string[] });
      }
      default: {
        if (s.format === "uuid") return fc.oneof(fc.constantFrom(...pools.ids), fc.uuid());
        if (s.format === "uri") return fc.oneof(fc.webUrl({ validSchemes: ["https"] }), fc.constant("https://example.com/cover.png"));
        const min = s.minLength ?? 0;
        const max = Math.min(s.maxLength ?? 60, 60);
        return fc.string({ minLength: Math.max(min, 1), maxLength: Math.max(max, min, 1) });
      }
    }
  });
  return arbs.length === 1 ? (arbs[0] as fc.Arbitrary<unknown>) : fc.oneof(...arbs);
}

/** A valid English pronunciation lexicon (the `pls` of most lexicon bodies: random text is never valid PLS). */
const FUZZ_PLS =
  '<?xml version="1.0" encoding="UTF-8"?><lexicon version="1.0" xmlns="http://www.w3.org/2005/01/pronunciation-lexicon" alphabet="ipa" xml:lang="en-US">' +
  "<lexeme><grapheme>Zxqv</grapheme><alias>quick brown fox</alias></lexeme></lexicon>";

/** A body field: mostly valid, sometimes hostile; file references from a pool of real shapes. */
function field(name: string, schema: Schema, doc: Schema, pools: Pools): fc.Arbitrary<unknown> {
  const valid =
    name === "file" || name === "voice_clone_sample" || name === "sample"
      ? fc.oneof(fc.constantFrom(...pools.files), validFor(schema, doc, pools))
      : name === "pls"
        ? fc.oneof({ weight: 3, arbitrary: fc.constant(FUZZ_PLS) }, { weight: 1, arbitrary: validFor(schema, doc, pools) })
        : name === "language"
          ? fc.oneof({ weight: 2, arbitrary: fc.constant("English") }, { weight: 1, arbitrary: validFor(schema, doc, pools) })
          : name === "voice" || name === "preset_voice_name"
        ? fc.oneof({ weight: 3, arbitrary: fc.constantFrom<unknown>(null, ...pools.voices) }, { weight: 1, arbitrary: validFor(schema, doc, pools) })
        : validFor(schema, doc, pools);
  return fc.oneof({ weight: 6, arbitrary: valid }, { weight: 1, arbitrary: hostileValue });
}

interface Pools {
  ids: string[];
  /** Webhook endpoints (their own pool: DELETE removes some as the run goes). */
  webhookIds: string[];
  uploadIds: string[];
  /** Cloned voices of alice's (their own pool: DELETE removes some as the run goes). */
  cloneIds: string[];
  /** Pronunciation lexicons of alice's (their own pool, like the clones). */
  lexiconIds: string[];
  voices: string[];
  files: string[];
  bearer: string[];
}

/* ------------------------------------------------------- whole requests */

const CONTENT_TYPES = [
  "application/json",
  "application/json; charset=utf-8",
  "application/merge-patch+json",
  "APPLICATION/JSON",
  "text/plain",
  "application/x-www-form-urlencoded",
  "multipart/form-data; boundary=x",
  "application/json; charset=latin1",
  "application/jsonx",
  "\u00ff/\u00ff",
];

/** Header values a client can send: visible ASCII, space and obs-text (DEL, a control, is Node's 400 before any gateway). */
const headerValue = fc.oneof(
  fc.string({ unit: fc.integer({ min: 0x20, max: 0xfe }).map((c) => String.fromCharCode(c === 0x7f ? 0xff : c)), maxLength: 80 }),
  fc.constantFrom("", " ", "\t", "x".repeat(70_000), "\u00ff\u00fe", "Bearer", "Bearer ", "Bearer a b"),
);

function credentials(pools: Pools): fc.Arbitrary<Array<[string, string]>> {
  const jwtPart = (v: unknown) => Buffer.from(JSON.stringify(v), "latin1").toString("base64url");
  const malformedJwt = fc
    .tuple(fc.oneof(hostileValue, fc.record({ alg: hostileValue })), fc.oneof(hostileValue, fc.record({ sub: hostileValue, exp: hostileValue })))
    .map(([h, p]) => `${jwtPart(h)}.${jwtPart(p)}.${Buffer.from("sig").toString("base64url")}`);
  return fc.oneof(
    { weight: 20, arbitrary: fc.constantFrom<Array<[string, string]>>([["API-KEY", ALICE_KEY]], [["Authorization", `Bearer ${ALICE_KEY}`]], [["API-KEY", BOB_KEY]]) },
    { weight: 2, arbitrary: fc.constantFrom(...pools.bearer).map((t): Array<[string, string]> => [["Authorization", `Bearer ${t}`]]) },
    { weight: 1, arbitrary: malformedJwt.map((t): Array<[string, string]> => [["Authorization", `Bearer ${t}`]]) },
    {
      weight: 1,
      arbitrary: fc.constantFrom("a.b.c", "...", "eyJ.eyJ.", `${"a".repeat(9000)}.b.c`, "a.b", "Zm9v.YmFy.YmF6").map((t): Array<[string, string]> => [["Authorization", `Bearer ${t}`]]),
    },
    { weight: 1, arbitrary: headerValue.map((v): Array<[string, string]> => [["API-KEY", v]]) },
    { weight: 1, arbitrary: headerValue.map((v): Array<[string, string]> => [["Authorization", v]]) },
    { weight: 1, arbitrary: fc.constant<Array<[string, string]>>([]) },
  );
}

/** Raw body text from a value: plain JSON mostly, else one of the classic parser traps. */
function bodyText(value: unknown): fc.Arbitrary<string | Uint8Array> {
  const json = JSON.stringify(value) ?? "null";
  const isObject = json.startsWith("{") && json.length > 2;
  const inner = isObject ? json.slice(1, -1) : '"x":1';
  return fc.oneof(
    { weight: 10, arbitrary: fc.constant(json) },
    {
      weight: 1,
      arbitrary: fc.constantFrom(
        `\ufeff${json}`,
        `{${inner},${inner}}`,
        `{"name":"a","name":{"x":[1,2]},${inner}}`,
        `{"__proto__":{"admin":true},"constructor":{"prototype":{"x":1}},${inner}}`,
        `${json} trailing`,
        json.slice(0, Math.max(1, Math.floor(json.length / 2))),
        `{${inner},"n":1e999,"m":-1e999,"k":123456789012345678901234567890}`,
        `{${inner},"n":NaN,"i":Infinity}`,
        `{${inner},"s":"\\ud800\\udfff\\ud800","b":"\\u202e"}`,
        `{${inner},}`,
        "",
        "   ",
        "null",
        "[]",
        '"just a string"',
        "{'single': 'quotes'}",
        "/* comment */ {}",
        `${"[".repeat(5000)}${"]".repeat(5000)}`,
        `{${inner},"deep":${'{"a":'.repeat(3000)}1${"}".repeat(3000)}}`,
        `{${inner},"deep":${"[".repeat(5000)}${"]".repeat(5000)}}`,
        `{${inner},"x":"${"y".repeat(1_100_000)}"}`,
      ),
    },
    {
      weight: 1,
      arbitrary: fc.constantFrom(
        Uint8Array.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0xc0, 0x80, 0x22, 0x7d]),
        Uint8Array.from([0xef, 0xbb, 0xbf, 0xef, 0xbb, 0xbf, 0x7b, 0x7d]),
        Uint8Array.from([0xfe, 0xff, 0x00, 0x7b, 0x00, 0x7d]),
        Uint8Array.from([0x00, 0x00, 0x00]),
      ),
    },
  );
}

function pathParam(ids: string[]): fc.Arbitrary<string> {
  return fc.oneof(
    { weight: 6, arbitrary: fc.constantFrom(...ids) },
    { weight: 2, arbitrary: fc.uuid() },
    { weight: 2, arbitrary: hostileString.map((s) => encodeURIComponent(s.replace(/[\ud800-\udfff]/g, "?"))) },
    {
      weight: 2,
      arbitrary: fc.constantFrom("%", "%E0%A4%A", "%ED%A0%80", "%00", "..%2F..%2Fetc", "%2e%2e", "a%2Fb", "%FF%FE", "%25", "x".repeat(5000), "\u00e9", "%C0%AE"),
    },
  );
}

function queryFor(op: Operation, doc: Schema, pools: Pools): fc.Arbitrary<string> {
  const params = op.parameters.filter((p) => p.in === "query");
  const valid = fc
    .tuple(...params.map((p) => fc.option(fc.oneof({ weight: 5, arbitrary: validFor(p.schema, doc, pools) }, { weight: 1, arbitrary: hostileValue }), { nil: undefined })))
    .map((values) => {
      const q = new URLSearchParams();
      values.forEach((v, i) => {
        if (v === undefined) return;
        const name = params[i]?.name ?? "x";
        q.append(name, typeof v === "string" ? v.replace(/[\ud800-\udfff]/g, "?") : JSON.stringify(v) ?? "");
      });
      return q.toString();
    });
  const raw = fc.constantFrom(
    "limit=%",
    "cursor=%E0%A4%A",
    "task_status=%ED%A0%80",
    "language=%",
    "limit=1&limit=2",
    "limit=1e999",
    "limit=-1",
    "limit=99999999999999999999999",
    "limit=0x10",
    "limit=%20%201",
    "task_status[]=queued",
    "cursor=" + "A".repeat(10_000),
    "%=%&&&==",
    "expires=1&signature=x",
    "expires=99999999999999999999&signature=%",
  );
  return fc.oneof({ weight: 5, arbitrary: op.query === undefined ? valid : fc.constant(op.query) }, { weight: 1, arbitrary: raw });
}

/** The ids a path's parameters are drawn from: each resource's own pool (DELETE removes some as the run goes). */
function idPoolOf(path: string, pools: Pools): string[] {
  if (path.startsWith("/v1/webhooks")) return pools.webhookIds;
  if (path.startsWith("/v1/uploads")) return pools.uploadIds;
  if (path.startsWith("/v1/voices/clones")) return pools.cloneIds;
  if (path.startsWith("/v1/lexicons")) return pools.lexiconIds;
  return pools.ids;
}

function requestFor(index: number, op: Operation, doc: Schema, pools: Pools): fc.Arbitrary<FuzzRequest> {
  const pathArb = fc
    .tuple(...op.parameters.filter((p) => p.in === "path").map(() => pathParam(idPoolOf(op.path, pools))))
    .map((values) => {
      let i = 0;
      return op.path.replace(/\{[^}]+\}/g, () => values[i++] ?? "x");
    });
  const method = fc.oneof({ weight: 12, arbitrary: fc.constant(op.method) }, { weight: 1, arbitrary: fc.constantFrom("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS") });
  const contentType = fc.oneof(
    { weight: 10, arbitrary: fc.constant<string | undefined>("application/json") },
    { weight: 2, arbitrary: fc.constantFrom<string | undefined>(undefined, ...CONTENT_TYPES) },
  );
  const extraHeaders = fc.array(
    fc.oneof(
      headerValue.map((v): [string, string] => ["Idempotency-Key", v]),
      fc.string({ minLength: 1, maxLength: 40 }).map((v): [string, string] => ["Idempotency-Key", v.replace(/[^\x20-\x7e]/g, "k")]),
      // A few shared keys, so replays and same-key-other-body conflicts happen too.
      fc.constantFrom<[string, string]>(["Idempotency-Key", "fuzz-1"], ["Idempotency-Key", "fuzz-2"], ["Idempotency-Key", "fuzz-3"]),
      headerValue.map((v): [string, string] => ["X-Request-Id", v]),
      headerValue.map((v): [string, string] => ["Range", v]),
      fc.constantFrom<[string, string]>(["Range", "bytes=0-1"], ["Range", "bytes=-0"], ["Range", "bytes=99999999999999999999-"], ["Content-Length", "5"], ["Accept", "*/*"]),
      fc.constant<[string, string]>(["X-Oversized", "v".repeat(100_000)]),
    ),
    { maxLength: 2 },
  );
  const body = op.body ? validFor(op.body, doc, pools).chain(bodyText) : fc.option(fc.constantFrom("{}", "garbage"), { nil: undefined });
  return fc.record({ path: pathArb, query: queryFor(op, doc, pools), method, contentType, credentials: credentials(pools), extraHeaders, body }).map((r) => {
    const headers: Array<[string, string]> = [...r.credentials, ...r.extraHeaders];
    if (r.contentType !== undefined && r.body !== undefined) headers.push(["Content-Type", r.contentType]);
    const hasBody = r.body !== undefined && r.method !== "GET" && r.method !== "HEAD";
    return { op: index, method: r.method, url: `${BASE}${r.path}${r.query ? `?${r.query}` : ""}`, headers, body: hasBody ? r.body : undefined };
  });
}

/* ------------------------------------------------------------------- run */

let t: TestGateway;
/** The listening gateway (fast path in front of the app). */
let origin: string;
let blobDir: { path: string; cleanup: () => Promise<void> };
let doc: Schema;
let pools: Pools;

const ALL_LANGUAGES = [...LANGUAGES];
const CAPABILITIES: Capabilities = {
  synthesis: { languages: ALL_LANGUAGES },
  recognition: { languages: ALL_LANGUAGES },
  translation: { pairs: ALL_LANGUAGES.flatMap((source) => ALL_LANGUAGES.filter((target) => target !== source).map((target) => ({ source, target, pivot: null, quality: "rule-based" as const }))) },
  cloning: { available: true, languages: ALL_LANGUAGES },
  voices: ALL_LANGUAGES.map((language) => ({ name: `${language.toLowerCase()}-1`, language, engine: "fake", gender: null, description: "a stand-in voice", default: true })),
};

beforeAll(async () => {
  blobDir = await tempDir("voiceloc-fuzz-blobs-");
  const blobs = createFsBlobStore({ root: blobDir.path });
  await blobs.put("results/fuzz.mp3", Buffer.from("ID3fuzz"), { contentType: "audio/mpeg" });
  t = await startTestGateway({ SIGNING_SECRET, PORT: "0", HOST: "127.0.0.1" }, { blobs });
  origin = `http://127.0.0.1:${await t.gateway.start()}`;
  // Our own ports, faked: a synthesis service and worker capability table that always answer.
  t.gateway.deps.synthesizer = { synthesize: async () => ({ key: "results/fuzz.mp3", durationSeconds: 1.5 }) };
  t.gateway.deps.voiceCatalog = { voices: async () => CAPABILITIES.voices };
  t.gateway.deps.capabilities = { get: async () => CAPABILITIES };
  // and a cloning service that makes every voice it is asked for, and deletes it
  t.gateway.deps.clones!.maker = {
    create: async () => ({ engine: "elevenlabs", ref: "fuzz-voice", profile: { median_pitch_hz: 120, pitch_low_hz: 90, pitch_high_hz: 160, syllables_per_second: 4 }, sample_seconds: 10, languages: ALL_LANGUAGES }),
    remove: async () => true,
  };

  doc = (await (await t.request("GET", "/openapi.json", { key: null })).json()) as Schema;
  const ids: string[] = [];
  for (const [path, body] of [
    ["/v1/audio_books/", { file: "https://example.com/a.txt", name: "n", source_language: "English", target_language: "French" }],
    ["/v1/voices/streams", { file: "https://example.com/a.wav", source_language: "English", target_language: "French" }],
    ["/v1/videos/subtitle", { file: "https://example.com/a.mp4", source_language: "English", target_language: "French" }],
  ] as const) {
    const res = await t.request("POST", path, { body });
    expect(res.status).toBeLessThan(300);
    ids.push(((await res.json()) as { id: string }).id);
  }
  // uploads of alice's, so their GET and DELETE are reached with existing ids too (several: DELETE removes them)
  const uploadIds: string[] = [];
  for (let i = 0; i < 20; i++) {
    const upload = await t.gateway.app.request(`${BASE}/v1/uploads?filename=fuzz.txt`, { method: "POST", headers: { "API-KEY": ALICE_KEY, "Content-Type": "text/plain" }, body: "fuzz words" });
    expect(upload.status).toBe(201);
    uploadIds.push(((await upload.json()) as { id: string }).id);
  }
  // webhook endpoints: several, as DELETE removes them as the run goes
  const webhookIds: string[] = [];
  for (let i = 0; i < 40; i++) {
    const res = await t.request("POST", "/v1/webhooks", { body: { url: `https://8.8.8.8/hook/${i}`, events: ["audio_book.completed"] } });
    expect(res.status).toBe(201);
    webhookIds.push(((await res.json()) as { id: string }).id);
  }
  // cloned voices: several, as DELETE removes them as the run goes
  const cloneIds: string[] = [];
  for (let i = 0; i < 20; i++) {
    const res = await t.request("POST", "/v1/voices/clones", { body: { name: `fuzz ${i}`, sample: "https://example.com/voice.wav" } });
    expect(res.status).toBe(201);
    cloneIds.push(((await res.json()) as { id: string }).id);
  }
  // pronunciation lexicons: several, as DELETE removes them as the run goes
  const lexiconIds: string[] = [];
  for (let i = 0; i < 20; i++) {
    const res = await t.request("POST", "/v1/lexicons", { body: { name: `fuzz ${i}`, language: "English", pls: FUZZ_PLS } });
    expect(res.status).toBe(201);
    lexiconIds.push(((await res.json()) as { id: string }).id);
  }
  const secret = new TextEncoder().encode(JWT_SECRET);
  const sign = (sub: string) => new SignJWT({}).setProtectedHeader({ alg: "HS256" }).setSubject(sub).setExpirationTime("1h").sign(secret);
  pools = {
    ids,
    webhookIds,
    uploadIds,
    cloneIds,
    lexiconIds,
    voices: [...CAPABILITIES.voices.map((v) => v.name), ...cloneIds.slice(0, 5).map((id) => `clone:${id}`), "clone:", "clone:0193f1c2-a7b4-7cc2-a1f0-4e4ab2b1a4d0"],
    files: ["https://example.com/a.wav", "books/a.txt", "http://8.8.8.8/a.wav", "http://10.0.0.1/a.wav", "s3://bucket/key", "../x", "ftp://x/y", "http://[::1]/"],
    bearer: [await sign("alice"), await sign("carol@example.com"), await sign(".."), await sign("a/b"), await sign("x".repeat(128))],
  };
});
afterAll(async () => {
  await t?.close();
  await blobDir?.cleanup();
});

function operations(): Operation[] {
  const ops: Operation[] = [];
  for (const [path, item] of Object.entries(doc.paths as Record<string, Record<string, Schema>>)) {
    for (const [method, op] of Object.entries(item)) {
      const body = op.requestBody?.content?.["application/json"]?.schema as Schema | undefined;
      ops.push({ method: method.toUpperCase(), path, parameters: (op.parameters ?? []) as Operation["parameters"], body });
    }
  }
  // Outside the OpenAPI document: signed downloads, service endpoints, the slash-less redirect.
  const signed = new URL(signBlobUrl({ key: "results/fuzz.mp3", baseUrl: BASE, secret: SIGNING_SECRET }));
  ops.push({ method: "GET", path: `/v1/files/{key}`, parameters: [{ name: "key", in: "path", schema: { type: "string" } }] });
  ops.push({ method: "GET", path: signed.pathname, parameters: [], query: signed.search.slice(1) });
  for (const path of ["/healthz", "/readyz", "/openapi.json", "/docs", "/docs/assets/{x}/{y}", "/v1/audio_books", "/v1/nowhere/{x}"]) {
    const names = [...path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]!);
    ops.push({ method: "GET", path, parameters: names.map((name) => ({ name, in: "path", schema: { type: "string" } })) });
  }
  return ops;
}

/**
 * The request sent to the listening gateway, each on a connection of its own (`Connection: close`: the
 * gateway may close one after answering early, as it does to a body it does not read). Framing is the
 * transport's: the body's own length is sent (a Content-Length that disagrees would split the bytes into
 * other requests, not reach the gateway as a field).
 */
function overTheWire(r: FuzzRequest): Promise<Response> {
  const headers = r.headers.filter(([name]) => name.toLowerCase() !== "content-length");
  const init: RequestInit = { method: r.method, headers: [...headers, ["Connection", "close"]], redirect: "manual" };
  if (r.body !== undefined) init.body = r.body as NonNullable<RequestInit["body"]>;
  return fetch(`${origin}${r.url.slice(BASE.length)}`, init);
}

function describeRequest(r: FuzzRequest): string {
  const cut = (s: string) => (s.length > 300 ? `${s.slice(0, 300)}…(${s.length})` : s);
  const body = r.body === undefined ? "" : typeof r.body === "string" ? cut(r.body) : `bytes ${Buffer.from(r.body).toString("hex")}`;
  return `${r.method} ${cut(r.url)} ${JSON.stringify(r.headers.map(([k, v]) => [k, cut(v)]))} ${JSON.stringify(body)}`;
}

describe("schema-driven fuzzing of every operation", () => {
  it(`answers ${RUNS} seeded hostile requests with no 5xx and only documented error bodies`, async () => {
    const ops = operations();
    const tally = new Map<string, { total: number; ok: number; clientError: number }>();
    const statuses = new Map<number, number>();
    let tried = 0;
    // Operations drawn uniformly (fc.oneof favours the first arbitraries): each one gets its share of the budget.
    const perOperation = ops.map((op, i) => requestFor(i, op, doc, pools));
    const arbitrary = fc.nat({ max: ops.length - 1 }).chain((i) => perOperation[i]!);

    await fc.assert(
      fc.asyncProperty(arbitrary, async (r) => {
        tried++;
        let res = await overTheWire(r);
        if (res.headers.get("x-request-id") === null) {
          // Node's HTTP server refused the request itself, before the gateway (every answer of the gateway has an
          // X-Request-Id): a header section over its 16 KB limit (431, or 408 while the client was still sending
          // it), or bytes it cannot parse (400). The app's own answer to it is checked in process below.
          expect([400, 408, 431], describeRequest(r)).toContain(res.status);
          expect(await res.text()).toBe("");
          const init: RequestInit = { method: r.method, headers: r.headers };
          if (r.body !== undefined) init.body = r.body as NonNullable<RequestInit["body"]>;
          res = await t.gateway.app.request(r.url, init);
        }
        const op = ops[r.op] as Operation;
        const key = `${op.method} ${op.path}`;
        const row = tally.get(key) ?? { total: 0, ok: 0, clientError: 0 };
        row.total++;
        if (res.status < 300 && r.method === op.method) row.ok++;
        if (res.status >= 400 && res.status < 500) row.clientError++;
        tally.set(key, row);
        statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);

        expect(res.status, describeRequest(r)).toBeLessThan(500);
        let text: string;
        if (res.status === 200 && (res.headers.get("content-type") ?? "").startsWith("text/event-stream") && res.body) {
          // a live progress stream of a record that never finishes here: its opening frame, then the client goes away
          const reader = res.body.getReader();
          const first = await reader.read();
          await reader.cancel();
          text = new TextDecoder().decode(first.value);
          expect(text, describeRequest(r)).toMatch(/^retry: \d+\n\n/);
        } else {
          text = await res.text();
        }
        if (res.status === 416) {
          // A range past the end of a download: no body, the size in Content-Range (RFC 9110 §15.5.17).
          expect(res.headers.get("content-range"), describeRequest(r)).toMatch(/^bytes \*\/\d+$/);
          expect(text).toBe("");
        } else if (res.status >= 400 && r.method !== "HEAD") {
          expect(res.headers.get("content-type"), describeRequest(r)).toMatch(/^application\/json/);
          const body: unknown = JSON.parse(text);
          const shape = res.status === 422 ? ValidationBody : ErrorBody;
          const parsed = shape.safeParse(body);
          expect(parsed.success, `${describeRequest(r)} → ${res.status} ${text.slice(0, 500)}`).toBe(true);
        }
      }),
      { seed: SEED, numRuns: RUNS, endOnFailure: true },
    );

    // every stream the fuzzer opened and dropped was released (the last one's close reaches the server a moment after the client goes)
    const released = Date.now() + 10_000;
    while (t.gateway.deps.events.stats().streams > 0 && Date.now() < released) await new Promise((r) => setTimeout(r, 20));
    expect(t.gateway.deps.events.stats()).toEqual({ streams: 0, records: 0, owners: 0 });
    const byStatus = [...statuses.entries()].sort(([a], [b]) => a - b).map(([s, n]) => `${s}×${n}`).join(" ");
    process.stdout.write(`fuzz: tried ${tried} requests over ${ops.length} operations (seed ${SEED}); statuses ${byStatus}\n`);
    expect(tried).toBe(RUNS);
    // Not vacuous: every documented operation was reached with valid requests, and refused some.
    for (const [path, item] of Object.entries(doc.paths as Record<string, Record<string, unknown>>)) {
      for (const method of Object.keys(item)) {
        const row = tally.get(`${method.toUpperCase()} ${path}`);
        expect(row?.ok ?? 0, `${method} ${path} succeeded`).toBeGreaterThan(0);
        expect(row?.clientError ?? 0, `${method} ${path} refused`).toBeGreaterThan(0);
      }
    }
  }, 300_000);
});
