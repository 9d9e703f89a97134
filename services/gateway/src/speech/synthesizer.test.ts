import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createInProcessBus, type Bus } from "@voiceloc/bus";
import { BUS_CATALOG, SynthesizeRequestSchema, type SynthesizeRequest } from "@voiceloc/contracts";
import { silentLogger } from "@voiceloc/log";
import { startTestGateway, type TestGateway } from "../testing/harness.ts";
import type { SynthesisReplyCode } from "./synthesizer.ts";

/** Words the stand-in puts in every refusal; engine trouble must never reach the client with them. */
const ENGINE_WORDS = "espeak-ng: /usr/lib/x86_64-linux-gnu/espeak-ng-data at 0x7ffd1234 failed";

/**
 * What the client sees for each code the synthesis service may reply with. A Record, so a new code in
 * the catalogue fails to compile until its answer is stated here too.
 */
const EXPECTED: Record<SynthesisReplyCode, { status: 422; field: "text" | "voice" | "language" } | { status: 502 | 503 }> = {
  text_empty: { status: 422, field: "text" },
  text_too_long: { status: 422, field: "text" },
  text_not_speakable: { status: 422, field: "text" },
  unknown_voice: { status: 422, field: "voice" },
  voice_language_mismatch: { status: 422, field: "voice" },
  language_not_supported: { status: 422, field: "language" },
  engine_unavailable: { status: 503 },
  engine_busy: { status: 503 },
  engine_failed: { status: 502 },
  invalid_request: { status: 502 },
  internal: { status: 502 },
};

let bus: Bus;
let t: TestGateway;
const served: SynthesizeRequest[] = [];

beforeAll(async () => {
  bus = createInProcessBus({ logger: silentLogger() });
  // A stand-in synthesis service on the real bus: it replies the code named by the voice it is asked for
  // (exactly as the wire carries it), or audio when no voice is given.
  await bus.serve(
    BUS_CATALOG.requests.synthesize.subject,
    SynthesizeRequestSchema,
    (request) => {
      served.push(request);
      if (request.voice === null) return { key: `speech/stand-in/${served.length}.mp3`, duration_seconds: 1.25, voice: "stand-in" };
      throw Object.assign(new Error(`${request.voice}: ${ENGINE_WORDS}`), { code: request.voice });
    },
    { queue: BUS_CATALOG.requests.synthesize.queue },
  );
  t = await startTestGateway({ SYNTHESIS_MAX_CHARACTERS: "20" }, { bus });
});

afterAll(async () => {
  await t?.close();
  await bus?.close();
});

const synthesize = (body: Record<string, unknown>) => t.request("POST", "/v1/speech/synthesize", { body });

describe("synthesis codes over the bus → HTTP answers", () => {
  it("answers 200 with a signed link when the service replies audio", async () => {
    const res = await synthesize({ text: "Hello there", language: "en" });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { audio_url: string; duration_seconds: number };
    expect(body.duration_seconds).toBe(1.25);
    expect(body.audio_url).toMatch(/\/v1\/files\/speech\/stand-in\/\d+\.mp3\?expires=\d+&signature=/);
  });

  const clientCodes = Object.entries(EXPECTED).flatMap(([code, e]) => (e.status === 422 ? [{ code, field: e.field }] : []));
  const engineCodes = Object.entries(EXPECTED).flatMap(([code, e]) => (e.status === 422 ? [] : [{ code, status: e.status }]));

  it("covers every code in one of the two tables", () => {
    expect(clientCodes.length + engineCodes.length).toBe(BUS_CATALOG.requests.synthesize.errors.length + 2);
  });

  it.each(clientCodes)("answers $code as a 422 pointing at body.$field, in the service's words", async ({ code, field }) => {
    const res = await synthesize({ text: "Hello there", language: "en", voice: code });
    expect(res.status).toBe(422);
    const input = { text: "Hello there", voice: code, language: "en" }[field];
    expect(await res.json()).toEqual({ detail: [{ type: "value_error", loc: ["body", field], msg: `Value error, ${code}: ${ENGINE_WORDS}`, input, ctx: { error: {} } }] });
  });

  it.each(engineCodes)("answers $code as a $status in fixed plain words", async ({ code, status }) => {
    const res = await synthesize({ text: "Hello there", language: "en", voice: code });
    expect(res.status).toBe(status);
    const body = (await res.json()) as { detail: string };
    expect(body.detail).toMatch(/^Speech synthesis [a-z ]+[:.]/);
    expect(body.detail).not.toContain("espeak");
    expect(body.detail).not.toContain("0x7ffd");
    expect(res.headers.get("retry-after") ?? "none").toMatch(status === 503 ? /^\d+$/ : /^none$/);
  });

  it("answers a code outside the catalogue as the service's internal failure (502), never as the free string", async () => {
    const res = await synthesize({ text: "Hello there", language: "en", voice: "made_up_code" });
    expect(res.status).toBe(502);
    const body = (await res.json()) as { detail: string };
    expect(body.detail).toBe("Speech synthesis failed inside the synthesis service. Nothing was stored; retry later.");
  });
});

describe("SYNTHESIS_MAX_CHARACTERS", () => {
  it("refuses longer text with a 422 naming the limit, without asking the synthesis service", async () => {
    const before = served.length;
    const text = "a".repeat(21);
    const res = await synthesize({ text, language: "English" });
    expect(res.status).toBe(422);
    expect(await res.json()).toEqual({
      detail: [{ type: "string_too_long", loc: ["body", "text"], msg: "String should have at most 20 characters", input: text, ctx: { max_length: 20 } }],
    });
    expect(served.length).toBe(before);
  });

  it("counts characters (code points), not UTF-16 units, like the schema's own limit", async () => {
    const before = served.length;
    const res = await synthesize({ text: "😀".repeat(20), language: "English" });
    expect(res.status).toBe(200);
    expect(served.length).toBe(before + 1);
    expect(served.at(-1)?.text).toBe("😀".repeat(20));
  });
});
