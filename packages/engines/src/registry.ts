import { rm } from "node:fs/promises";
import { join } from "node:path";
import type { Logger } from "@voiceloc/log";
import { timeEngine } from "@voiceloc/telemetry";
import { outputPath, withScratchDir } from "./cli.ts";
import {
  LanguageNotSupportedError,
  SpeechServiceError,
  SynthesisError,
  TtsConfigError,
  TtsError,
  UnknownVoiceError,
  VoiceLanguageMismatchError,
  type TtsErrorCode,
} from "./errors.ts";
import { isLanguage, LANGUAGES, type Language } from "./languages.ts";
import { normaliseText } from "./normalise/index.ts";
import { SELF_TEST_SENTENCES, selfTestWord } from "./samples.ts";
import { LANGUAGE_SCRIPTS, SCRIPT_LANGUAGE, splitScriptRuns, type Script } from "./scripts.ts";
import { prepareText, splitText } from "./text.ts";
import type { SynthesisResult, SynthesizeRequest, TtsEngine, VoiceInfo } from "./types.ts";
import { joinPcm16Wavs, readWavInfo, wavSeconds } from "./wav.ts";

export interface TtsCapabilityTable {
  /** Languages with at least one working voice, in the service's language order. */
  languages: Language[];
  /** Every voice not found broken, best first within each language. */
  voices: VoiceInfo[];
  /** The default voice name per supported language. */
  defaults: Partial<Record<Language, string>>;
  /** Whether any engine can clone a voice. */
  cloning: boolean;
  /** Every working engine of each supported language, in the order its voices are tried (ENGINE_ORDER_TTS first). */
  chains: Partial<Record<Language, string[]>>;
}

export interface ResolvedVoice {
  /**
   * Speaks with `voice`; when that voice fails at run time (a crash, a service error, a timeout:
   * not the text's fault) the next voice of the language speaks instead, and runs of a script the
   * voice cannot read (a Latin brand name in Hindi text) are spoken by a voice that reads them.
   */
  engine: TtsEngine;
  voice: VoiceInfo;
}

export interface VoiceSelfTestFailure {
  voice: string;
  engine: string;
  language: Language;
  reason: string;
}

export interface TtsSelfTestReport {
  /** Voices that spoke their sentence. */
  passed: string[];
  /** Voices dropped from the table, with the reason in plain words. */
  dropped: VoiceSelfTestFailure[];
  /** Languages left without any working voice. */
  uncovered: Language[];
}

export interface TtsRegistry {
  readonly engines: readonly TtsEngine[];
  /** Working voices for a language, most natural first. */
  voicesFor(language: Language): VoiceInfo[];
  /** The most natural working voice for a language (flite/festival before espeak-ng), if any. */
  defaultVoice(language: Language): VoiceInfo | undefined;
  /**
   * The engine and voice for a request. Throws LanguageNotSupportedError, UnknownVoiceError or
   * VoiceLanguageMismatchError (all naming the language or voice). A voice found broken since
   * resolves to the language's default voice.
   */
  resolve(language: string, voiceName?: string): ResolvedVoice;
  capabilities(): TtsCapabilityTable;
  /**
   * Speaks one short native sentence with each language's default voice (bounded concurrency, each
   * with a time limit); a voice that fails is dropped and the next one tested, until every language
   * has a working default or none is left. Other voices are tested the first time they are used.
   */
  selfTest(): Promise<TtsSelfTestReport>;
}

export interface TtsRegistryOptions {
  /** Where dropped voices and run-time fallbacks are logged. */
  logger?: Logger | undefined;
  /** Time limit of one voice's self-test. Default 30 s (generous: a loaded machine is slow to start festival). */
  selfTestTimeoutMs?: number | undefined;
  /** Self-tests run at once at start. Default 4. */
  selfTestConcurrency?: number | undefined;
  /** Shortest audio a self-test sentence must give. Default 0.3 s. */
  minSelfTestSeconds?: number | undefined;
  /**
   * Engine ids whose voices come first, in this order, for every language they speak (ENGINE_ORDER_TTS):
   * their best voice is the language's default and the others follow as fallbacks, most natural first.
   */
  order?: readonly string[] | undefined;
}

interface Entry {
  voice: VoiceInfo;
  engine: TtsEngine;
  order: number;
  dropped: boolean;
}

type FailureScope = "input" | "cancelled" | "text" | "transient" | "voice" | "engine";

/** What a failed engine call says about the voice (input faults are never retried with another voice). */
const TTS_FAILURE_SCOPE: Record<TtsErrorCode, FailureScope> = {
  TEXT_EMPTY: "input",
  SYNTHESIS_CANCELLED: "cancelled",
  TEXT_NOT_SPEAKABLE: "text",
  UNKNOWN_VOICE: "voice",
  VOICE_LANGUAGE_MISMATCH: "voice",
  LANGUAGE_NOT_SUPPORTED: "voice",
  SYNTHESIS_FAILED: "voice",
  // the same text would need as much memory from another voice: not tried again
  SYNTHESIS_OUT_OF_MEMORY: "input",
  SPEECH_SERVICE_BAD_RESPONSE: "voice",
  SPEECH_SERVICE_REJECTED: "voice",
  SPEECH_SERVICE_RATE_LIMITED: "transient",
  SPEECH_SERVICE_TIMEOUT: "transient",
  ENGINE_UNAVAILABLE: "engine",
  ENGINE_CONFIG_INVALID: "engine",
  SPEECH_SERVICE_AUTH: "engine",
  SPEECH_SERVICE_UNAVAILABLE: "engine",
  // a clone has no other voice to fall back to: the request or task fails in plain words
  SAMPLE_UNUSABLE: "input",
  CLONE_NOT_FOUND: "input",
};

function failureScope(error: unknown): FailureScope {
  if (!(error instanceof TtsError)) return "voice";
  const scope = TTS_FAILURE_SCOPE[error.code];
  // A service without the speech endpoint (404) is unusable as a whole.
  if (error instanceof SpeechServiceError && error.status === 404) return "engine";
  return scope;
}

function reasonOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** At most two words of at most 12 letters in all. */
function isShort(text: string): boolean {
  const words = text.trim().split(/\s+/u).filter((w) => /[\p{L}\p{N}]/u.test(w));
  return words.length <= 2 && [...text.replace(/[^\p{L}\p{N}]/gu, "")].length <= 12;
}

function reads(voice: VoiceInfo, script: Script | undefined): boolean {
  return script === undefined || voice.reads === undefined || voice.reads.includes(script);
}

/** Runs `fn` over `items`, at most `limit` at once. */
async function eachLimited<T>(items: readonly T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const workers = Array.from({ length: Math.max(1, Math.min(limit, items.length)) }, async () => {
    while (next < items.length) {
      const item = items[next++] as T;
      await fn(item);
    }
  });
  await Promise.all(workers);
}

/** Combines engines into one table of voices. Engines listed first win ties in quality. */
export function createTtsRegistry(given: readonly TtsEngine[], options: TtsRegistryOptions = {}): TtsRegistry {
  // Every call is timed (voiceloc_engine_duration_seconds) and traced.
  const engines = given.map((engine) => timeEngine(engine, ["synthesize"]));
  const ids = new Set<string>();
  for (const engine of engines) {
    if (ids.has(engine.id)) throw new TtsConfigError(`Two speech engines share the id "${engine.id}".`);
    ids.add(engine.id);
  }
  const log = options.logger?.child({ component: "tts-registry" });
  const testTimeoutMs = options.selfTestTimeoutMs ?? 30_000;
  const minSeconds = options.minSelfTestSeconds ?? 0.3;
  const entries: Entry[] = [];
  for (const engine of engines) {
    for (const voice of engine.capabilities().voices) entries.push({ voice, engine, order: entries.length, dropped: false });
  }
  const chosen = (engine: TtsEngine): number => {
    const at = options.order?.indexOf(engine.id) ?? -1;
    return at === -1 ? Number.MAX_SAFE_INTEGER : at;
  };
  entries.sort((a, b) => chosen(a.engine) - chosen(b.engine) || b.voice.quality - a.voice.quality || a.order - b.order);
  const cloning = engines.some((e) => e.capabilities().cloning);

  const live = (language: Language): Entry[] => entries.filter((e) => !e.dropped && e.voice.language === language);
  const liveLanguages = (): Language[] => LANGUAGES.filter((l) => live(l).length > 0);

  // Self-tests, keyed by voice name (a multilingual service voice is tested once).
  const tests = new Map<string, Promise<boolean>>();
  const failures: VoiceSelfTestFailure[] = [];

  function drop(entry: Entry, scope: FailureScope, reason: string, phase: "start" | "first use" | "recheck"): void {
    const victims = scope === "engine" ? entries.filter((e) => e.engine === entry.engine) : entries.filter((e) => e.voice.name === entry.voice.name);
    for (const victim of victims) {
      if (victim.dropped) continue;
      victim.dropped = true;
      failures.push({ voice: victim.voice.name, engine: victim.engine.id, language: victim.voice.language, reason });
      log?.warn(
        { voice: victim.voice.name, engine: victim.engine.id, language: victim.voice.language, reason, phase, scope: scope === "engine" ? "engine" : "voice" },
        "voice failed its self-test and is no longer offered",
      );
    }
  }

  async function runSelfTest(entry: Entry, phase: "start" | "first use" | "recheck"): Promise<boolean> {
    const language = entry.voice.language;
    const text = entry.engine.capabilities().remote ? selfTestWord(language) : SELF_TEST_SENTENCES[language];
    try {
      return await withScratchDir(async (dir) => {
        const result = await entry.engine.synthesize({
          text,
          language,
          voice: entry.voice.name,
          outPath: join(dir, "self-test.wav"),
          signal: AbortSignal.timeout(testTimeoutMs),
        });
        const info = await readWavInfo(result.wavPath);
        const seconds = info ? wavSeconds(info) : 0;
        const needed = entry.engine.capabilities().remote ? Math.min(minSeconds, 0.1) : minSeconds;
        if (seconds < needed) {
          drop(entry, "voice", `it gave ${seconds.toFixed(2)} s of audio for a sentence`, phase);
          return false;
        }
        log?.debug({ voice: entry.voice.name, seconds, phase }, "voice passed its self-test");
        return true;
      });
    } catch (error) {
      const scope = failureScope(error);
      const reason = scope === "cancelled" ? `it did not finish within ${Math.round(testTimeoutMs / 1000)} s` : reasonOf(error);
      drop(entry, scope === "engine" ? "engine" : "voice", reason, phase);
      return false;
    }
  }

  /** True once the voice has spoken its self-test sentence; false (and dropped) when it failed. */
  async function ensureTested(entry: Entry, signal?: AbortSignal): Promise<boolean> {
    if (entry.dropped) return false;
    let test = tests.get(entry.voice.name);
    if (!test) {
      test = runSelfTest(entry, "first use");
      tests.set(entry.voice.name, test);
    }
    const ok = signal ? await raceAbort(test, signal) : await test;
    return ok && !entry.dropped;
  }

  /** After a run-time failure, the voice is tested again; it is dropped when that fails too. */
  function recheck(entry: Entry): void {
    if (entry.dropped) return;
    const again = runSelfTest(entry, "recheck");
    tests.set(entry.voice.name, again);
  }

  /** Speaks `text` with the first voice of `chain` that works, writing `outPath`. */
  async function speakWithChain(text: string, chain: readonly Entry[], request: SynthesizeRequest, outPath: string): Promise<SynthesisResult> {
    let first: unknown;
    for (const candidate of chain) {
      if (!(await ensureTested(candidate, request.signal))) continue;
      try {
        return await speakSized(candidate, text, request.signal, outPath);
      } catch (error) {
        const scope = failureScope(error);
        if (scope === "input" || scope === "cancelled" || request.signal?.aborted) throw error;
        first ??= error;
        log?.warn(
          { voice: candidate.voice.name, engine: candidate.engine.id, language: candidate.voice.language, reason: reasonOf(error), scope },
          "voice failed; trying the next voice of the language",
        );
        if (scope === "voice" || scope === "engine") recheck(candidate);
      }
    }
    if (first !== undefined) throw first;
    const language = chain[0]?.voice.language ?? request.language;
    throw new SynthesisError("SYNTHESIS_FAILED", `No working voice is left for ${language}: every voice failed its self-test.`);
  }

  /** One voice; text longer than its engine takes in one call is split on sentences and joined. */
  async function speakSized(entry: Entry, text: string, signal: AbortSignal | undefined, outPath: string): Promise<SynthesisResult> {
    const limit = entry.engine.capabilities().maxInputChars;
    const call = (t: string, path: string) => entry.engine.synthesize({ text: t, language: entry.voice.language, voice: entry.voice.name, signal, outPath: path });
    // Code points ≤ UTF-16 units: most texts are answered without spreading them into an array.
    if (text.length <= limit || [...text].length <= limit) return call(text, outPath);
    const parts = splitText(text, Math.max(20, limit));
    return withScratchDir(async (dir) => {
      const wavs: string[] = [];
      for (const [i, part] of parts.entries()) wavs.push((await call(part, join(dir, `part-${i}.wav`))).wavPath);
      const rate = await joinPcm16Wavs(wavs, outPath);
      if (rate === undefined) throw new SynthesisError("SYNTHESIS_FAILED", `The voice "${entry.voice.name}" wrote audio that cannot be joined.`);
      return { wavPath: outPath, sampleRate: rate, voice: entry.voice.name };
    });
  }

  /** The voices that read a run of `script` in text of `language`, best first. */
  function readersFor(script: Script | undefined, language: Language, chain: readonly Entry[]): Entry[] {
    const own = chain.filter((e) => reads(e.voice, script));
    if (script === undefined || LANGUAGE_SCRIPTS[language].includes(script)) return own.length > 0 ? own : [...chain];
    const other = SCRIPT_LANGUAGE[script];
    const helpers = other === undefined || other === language ? [] : live(other).filter((e) => reads(e.voice, script));
    const readers = [...own, ...helpers];
    return readers.length > 0 ? readers : [...chain];
  }

  async function speak(primary: Entry, request: SynthesizeRequest): Promise<SynthesisResult> {
    const language = primary.voice.language;
    // Written forms the engines misread ("$5", "2026-11-28", "3,5") become words of the language first.
    const text = prepareText(normaliseText(request.text, language));
    const chain = [primary, ...live(language).filter((e) => e !== primary)];
    const outPath = outputPath(request.outPath);
    // Group the text's script runs by the voices that can read them.
    const groups: { text: string; readers: Entry[]; script: Script | undefined }[] = [];
    const same = (a: readonly Entry[], b: readonly Entry[]) => a.length === b.length && a.every((e, i) => e === b[i]);
    for (const run of splitScriptRuns(text)) {
      const readers = readersFor(run.script, language, chain);
      const last = groups.at(-1);
      const before = groups.at(-2);
      if (last && same(last.readers, readers)) {
        last.text += run.text;
      } else if (before && last && same(before.readers, readers) && isShort(last.text) && before.readers[0] && reads(before.readers[0].voice, last.script)) {
        // A word or two between two runs of the same helper ("Google и iPhone") stays with the helper when it reads them.
        before.text += last.text + run.text;
        groups.pop();
      } else {
        groups.push({ text: run.text, readers, script: run.script });
      }
    }
    const only = groups[0];
    if (groups.length === 1 && only) return speakWithChain(text, only.readers, request, outPath);
    return withScratchDir(async (dir) => {
      const results: { result: SynthesisResult; chars: number }[] = [];
      for (const [i, group] of groups.entries()) {
        const piece = group.text.trim();
        if (!/[\p{L}\p{N}]/u.test(piece)) continue;
        results.push({ result: await speakWithChain(piece, group.readers, request, join(dir, `run-${i}.wav`)), chars: piece.length });
      }
      const rate = await joinPcm16Wavs(
        results.map((r) => r.result.wavPath),
        outPath,
      );
      if (rate === undefined) {
        await rm(outPath, { force: true });
        throw new SynthesisError("SYNTHESIS_FAILED", "The voices wrote audio that cannot be joined.");
      }
      const voices = results.map((r) => r.result.voice);
      const voice = voices.includes(primary.voice.name) ? primary.voice.name : (voices[0] ?? primary.voice.name);
      return { wavPath: outPath, sampleRate: rate, voice };
    });
  }

  function speakingEngine(primary: Entry): TtsEngine {
    return {
      id: primary.engine.id,
      capabilities: () => primary.engine.capabilities(),
      synthesize(request) {
        const named = request.voice === undefined || request.voice === "" ? undefined : request.voice;
        let entry = primary;
        if (named !== undefined && named !== primary.voice.name) {
          entry = pick(request.language, named);
        } else if (request.language !== primary.voice.language) {
          entry = pick(request.language, undefined);
        }
        return speak(entry, request);
      },
    };
  }

  function pick(language: string, voiceName: string | undefined): Entry {
    if (!isLanguage(language)) {
      throw new LanguageNotSupportedError(language, `"${language}" is not a language this service knows. Known languages: ${LANGUAGES.join(", ")}.`);
    }
    const candidates = live(language);
    const best = candidates[0];
    if (voiceName === undefined || voiceName === "") {
      if (!best) throw new LanguageNotSupportedError(language);
      return best;
    }
    const match = candidates.find((e) => e.voice.name === voiceName);
    if (match) return match;
    const broken = entries.find((e) => e.dropped && e.voice.name === voiceName && e.voice.language === language);
    if (broken && best) {
      log?.info({ voice: voiceName, instead: best.voice.name, language }, "the voice asked for was found broken; using the default voice");
      return best;
    }
    const elsewhere = entries.filter((e) => !e.dropped && e.voice.name === voiceName);
    if (elsewhere.length > 0) {
      throw new VoiceLanguageMismatchError(voiceName, language, [...new Set(elsewhere.map((e) => e.voice.language))]);
    }
    throw new UnknownVoiceError(
      voiceName,
      candidates.map((e) => e.voice.name),
    );
  }

  return {
    engines,
    voicesFor: (language) => live(language).map((e) => e.voice),
    defaultVoice: (language) => live(language)[0]?.voice,
    resolve(language, voiceName) {
      const entry = pick(language, voiceName);
      return { engine: speakingEngine(entry), voice: entry.voice };
    },
    capabilities() {
      const languages = liveLanguages();
      const defaults: Partial<Record<Language, string>> = {};
      const chains: Partial<Record<Language, string[]>> = {};
      for (const language of languages) {
        const voices = live(language);
        const best = voices[0];
        if (best) defaults[language] = best.voice.name;
        chains[language] = [...new Set(voices.map((e) => e.engine.id))];
      }
      return { languages, voices: languages.flatMap((l) => live(l).map((e) => e.voice)), defaults, cloning, chains };
    },
    async selfTest() {
      const passed = new Set<string>();
      const present = LANGUAGES.filter((l) => entries.some((e) => e.voice.language === l));
      await eachLimited(present, options.selfTestConcurrency ?? 4, async (language) => {
        for (;;) {
          const best = live(language)[0];
          if (!best) {
            log?.warn({ language }, "no working voice for this language; speech in it is not offered");
            return;
          }
          let test = tests.get(best.voice.name);
          if (!test) {
            test = runSelfTest(best, "start");
            tests.set(best.voice.name, test);
          }
          const ok = await test;
          if (ok && !best.dropped) {
            passed.add(best.voice.name);
            return;
          }
          if (!best.dropped) return; // cannot happen: a failed test drops the voice; never loop on it
        }
      });
      return {
        passed: [...passed],
        dropped: [...failures],
        uncovered: present.filter((l) => live(l).length === 0),
      };
    },
  };
}

/** Waits for `promise`, or throws a cancellation error as soon as `signal` aborts. */
async function raceAbort<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) throw new SynthesisError("SYNTHESIS_CANCELLED", "Speech synthesis was cancelled.");
  let onAbort: (() => void) | undefined;
  const aborted = new Promise<never>((_, reject) => {
    onAbort = () => reject(new SynthesisError("SYNTHESIS_CANCELLED", "Speech synthesis was cancelled."));
    signal.addEventListener("abort", onAbort, { once: true });
  });
  try {
    return await Promise.race([promise, aborted]);
  } finally {
    if (onAbort) signal.removeEventListener("abort", onAbort);
  }
}
