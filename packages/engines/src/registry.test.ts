import { writeFile } from "node:fs/promises";
import { describe, expect, it } from "vitest";
import { outputPath } from "./cli.ts";
import { SynthesisError, UnspeakableTextError } from "./errors.ts";
import type { Language } from "./languages.ts";
import { createTtsRegistry } from "./registry.ts";
import { SELF_TEST_SENTENCES } from "./samples.ts";
import { splitScriptRuns } from "./scripts.ts";
import { prepareText } from "./text.ts";
import type { SynthesisResult, SynthesizeRequest, TtsEngine, VoiceInfo } from "./types.ts";
import { encodePcm16Wav, readWavInfo, wavSeconds } from "./wav.ts";

type Behaviour = "ok" | "silent" | "crash" | "crash-after-test";

/**
 * A speech engine of our own port for registry tests: writes 50 ms of tone per character, or fails
 * as told per voice. Records every text it was asked to speak.
 */
function fakeEngine(id: string, voices: (Omit<VoiceInfo, "engine" | "description"> & { behaviour?: Behaviour })[]): TtsEngine & { calls: { voice: string; text: string }[] } {
  const calls: { voice: string; text: string }[] = [];
  const infos: VoiceInfo[] = voices.map(({ behaviour: _b, ...v }) => ({ ...v, engine: id, description: `${v.name} test voice` }));
  const behaviour = new Map(voices.map((v) => [v.name, v.behaviour ?? "ok"]));
  return {
    id,
    calls,
    capabilities: () => ({ languages: [...new Set(infos.map((v) => v.language))], voices: infos, cloning: false, maxInputChars: 1000 }),
    async synthesize(request: SynthesizeRequest): Promise<SynthesisResult> {
      const voice = request.voice ?? "";
      const text = prepareText(request.text);
      calls.push({ voice, text });
      const how = behaviour.get(voice);
      const isSelfTest = Object.values(SELF_TEST_SENTENCES).includes(text);
      if (how === "crash" || (how === "crash-after-test" && !isSelfTest)) {
        throw new SynthesisError("SYNTHESIS_FAILED", `The ${id} speech engine failed with voice "${voice}".`);
      }
      const rate = 16_000;
      const seconds = how === "silent" ? 0.01 : 0.05 * [...text].length;
      const samples = new Int16Array(Math.round(rate * seconds)).map((_, i) => Math.round(3000 * Math.sin(i / 5)));
      const wavPath = outputPath(request.outPath);
      await writeFile(wavPath, encodePcm16Wav(samples, rate));
      return { wavPath, sampleRate: rate, voice };
    },
  };
}

async function secondsOf(result: SynthesisResult): Promise<number> {
  const info = await readWavInfo(result.wavPath);
  if (!info) throw new Error("no WAV");
  return wavSeconds(info);
}

const russian = (name: string, quality: number, behaviour: Behaviour = "ok") => ({ name, language: "Russian" as Language, quality, behaviour });

describe("TTS registry self-test", () => {
  it("drops a default voice that writes no audio at start; the next voice becomes the default", async () => {
    const good = fakeEngine("good", [russian("good:ru", 20)]);
    const broken = fakeEngine("broken", [russian("broken:ru", 50, "silent")]);
    const registry = createTtsRegistry([broken, good]);
    expect(registry.capabilities().defaults.Russian).toBe("broken:ru");

    const report = await registry.selfTest();

    expect(report.dropped).toEqual([expect.objectContaining({ voice: "broken:ru", language: "Russian", reason: expect.stringContaining("0.01 s") })]);
    expect(report.passed).toEqual(["good:ru"]);
    const table = registry.capabilities();
    expect(table.defaults.Russian).toBe("good:ru");
    expect(table.voices.map((v) => v.name)).toEqual(["good:ru"]);
    expect(registry.resolve("Russian").voice.name).toBe("good:ru");
  });

  it("leaves a language uncovered when every voice fails, and drops every voice of an engine that cannot start", async () => {
    const engine = fakeEngine("gone", [russian("gone:ru", 50, "crash"), { name: "gone:en", language: "English", quality: 50, behaviour: "ok" }]);
    const registry = createTtsRegistry([engine]);
    const report = await registry.selfTest();
    expect(report.uncovered).toEqual(["Russian"]);
    expect(registry.capabilities().languages).toEqual(["English"]);
    expect(() => registry.resolve("Russian")).toThrow(/not available/);
  });

  it("tests a non-default voice the first time it is used; a failing one is dropped and the next voice speaks", async () => {
    const engine = fakeEngine("e", [russian("e:best", 50), russian("e:other", 40, "silent"), russian("e:third", 30)]);
    const registry = createTtsRegistry([engine]);
    await registry.selfTest();
    expect(engine.calls.map((c) => c.voice)).toEqual(["e:best"]);

    const { engine: speaker } = registry.resolve("Russian", "e:other");
    const result = await speaker.synthesize({ text: "Добрый вечер.", language: "Russian", voice: "e:other" });

    expect(result.voice).toBe("e:best");
    expect(await secondsOf(result)).toBeGreaterThan(0.3);
    expect(registry.voicesFor("Russian").map((v) => v.name)).toEqual(["e:best", "e:third"]);
    // The broken voice asked for by name later resolves to the default voice.
    expect(registry.resolve("Russian", "e:other").voice.name).toBe("e:best");
  });
});

describe("TTS registry run-time fallback", () => {
  it("a voice that crashes on a request is replaced by the next voice of the language before the error reaches the caller", async () => {
    const flaky = fakeEngine("flaky", [russian("flaky:ru", 50, "crash-after-test")]);
    const steady = fakeEngine("steady", [russian("steady:ru", 20)]);
    const registry = createTtsRegistry([flaky, steady]);
    await registry.selfTest();
    const { engine, voice } = registry.resolve("Russian");
    expect(voice.name).toBe("flaky:ru");

    const result = await engine.synthesize({ text: "Как дела?", language: "Russian", voice: voice.name });

    expect(result.voice).toBe("steady:ru");
    expect(steady.calls.map((c) => c.text)).toContain("Как дела?");
    expect(await secondsOf(result)).toBeGreaterThan(0.3);
  });

  it("does not hide the caller's mistakes: empty text fails at once without trying other voices", async () => {
    const a = fakeEngine("a", [russian("a:ru", 50)]);
    const b = fakeEngine("b", [russian("b:ru", 20)]);
    const registry = createTtsRegistry([a, b]);
    const { engine, voice } = registry.resolve("Russian");
    await expect(engine.synthesize({ text: " … ", language: "Russian", voice: voice.name })).rejects.toMatchObject({ code: "TEXT_EMPTY" });
    expect(b.calls).toEqual([]);
  });

  it("when every voice fails, the first voice's error reaches the caller", async () => {
    const a = fakeEngine("a", [russian("a:ru", 50, "crash-after-test")]);
    const registry = createTtsRegistry([a]);
    const { engine, voice } = registry.resolve("Russian");
    await expect(engine.synthesize({ text: "Как дела?", language: "Russian", voice: voice.name })).rejects.toThrow(/a speech engine failed/);
  });
});

describe("mixed-script text", () => {
  it("splits text into script runs; digits and punctuation stay with the run they follow", () => {
    expect(splitScriptRuns("Привет, Google и iPhone 15. Пока")).toEqual([
      { text: "Привет, ", script: "Cyrillic" },
      { text: "Google ", script: "Latin" },
      { text: "и ", script: "Cyrillic" },
      { text: "iPhone 15. ", script: "Latin" },
      { text: "Пока", script: "Cyrillic" },
    ]);
    expect(splitScriptRuns("15 Google")).toEqual([{ text: "15 Google", script: "Latin" }]);
  });

  it("runs the voice cannot read are spoken by a voice that reads them, and joined in order", async () => {
    const native = fakeEngine("native", [{ name: "native:hi", language: "Hindi", quality: 50, reads: ["Devanagari"] }]);
    const english = fakeEngine("english", [{ name: "english:en", language: "English", quality: 50, reads: ["Latin"] }]);
    const registry = createTtsRegistry([native, english]);
    const { engine, voice } = registry.resolve("Hindi");

    const result = await engine.synthesize({ text: "नमस्ते Google दुनिया", language: "Hindi", voice: voice.name });

    expect(native.calls.map((c) => c.text)).toEqual([SELF_TEST_SENTENCES.Hindi, "नमस्ते", "दुनिया"]);
    expect(english.calls.map((c) => c.text)).toEqual([SELF_TEST_SENTENCES.English, "Google"]);
    expect(result.voice).toBe("native:hi");
    // 50 ms per character of each piece: 6 + 6 + 6 characters.
    expect(await secondsOf(result)).toBeCloseTo(0.05 * 18, 1);
  });

  it("a voice refusing text it cannot read hands it to the next voice of the language", async () => {
    const picky: TtsEngine = {
      ...fakeEngine("picky", [{ name: "picky:ja", language: "Japanese", quality: 50 }]),
      async synthesize(request) {
        if (/\p{Script=Han}/u.test(request.text)) throw new UnspeakableTextError("TEXT_NOT_SPEAKABLE", "kanji");
        return fakeEngine("x", [{ name: "picky:ja", language: "Japanese", quality: 50 }]).synthesize(request);
      },
    };
    const service = fakeEngine("service", [{ name: "service:ja", language: "Japanese", quality: 10 }]);
    const registry = createTtsRegistry([picky, service]);
    const { engine, voice } = registry.resolve("Japanese");
    const result = await engine.synthesize({ text: "東京へようこそ", language: "Japanese", voice: voice.name });
    expect(result.voice).toBe("service:ja");
  });
});

describe("mixed-script grouping", () => {
  it("a short native word between two foreign runs stays with the helper voice when it reads it", async () => {
    const native = fakeEngine("native", [{ name: "native:ru", language: "Russian", quality: 50, reads: ["Cyrillic"] }]);
    const helper = fakeEngine("helper", [{ name: "helper:ru", language: "Russian", quality: 20, reads: ["Cyrillic", "Latin"] }]);
    const registry = createTtsRegistry([native, helper]);
    const { engine, voice } = registry.resolve("Russian");
    await engine.synthesize({ text: "Привет, мир. Google и iPhone. Добро пожаловать.", language: "Russian", voice: voice.name });
    expect(native.calls.map((c) => c.text)).toEqual([SELF_TEST_SENTENCES.Russian, "Привет, мир.", "Добро пожаловать."]);
    expect(helper.calls.map((c) => c.text)).toEqual([SELF_TEST_SENTENCES.Russian, "Google и iPhone."]);
  });
});
