import { mkdtemp, readdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Logger } from "@voiceloc/log";
import { outOfMemoryReason, ranOutOfMemory, runProcess, type ProcessResult } from "@voiceloc/media";
import { LANGUAGES, type Language } from "../languages.ts";
import { assembleChunks, joinParagraphs, mapInOrder, normalizeTranslationInput, planChunks, type TranslationChunk } from "./chunk.ts";
import { finishSentence, MtConfigError, MtEngineUnavailableError, TranslationError, TranslationNotSupportedError } from "./errors.ts";
import type { MtCapabilities, MtEngine, MtPair, TranslationRequest } from "./types.ts";

/** ISO 639-1 and 639-3 codes Apertium uses in mode names, for the service's languages. */
export const APERTIUM_LANGUAGE_CODES: Readonly<Record<string, Language>> = {
  fr: "French", fra: "French", fre: "French",
  en: "English", eng: "English",
  am: "Amharic", amh: "Amharic",
  sw: "Swahili", swa: "Swahili", swh: "Swahili",
  zh: "Chinese", zho: "Chinese", chi: "Chinese", cmn: "Chinese",
  ja: "Japanese", jpn: "Japanese",
  ko: "Korean", kor: "Korean",
  de: "German", deu: "German", ger: "German",
  ru: "Russian", rus: "Russian",
  pt: "Portuguese", por: "Portuguese",
  es: "Spanish", spa: "Spanish",
  it: "Italian", ita: "Italian",
  ar: "Arabic", ara: "Arabic",
  nl: "Dutch", nld: "Dutch", dut: "Dutch",
  hi: "Hindi", hin: "Hindi",
  ur: "Urdu", urd: "Urdu",
};

/** A translation mode Apertium reports, read as a language pair. */
export interface ApertiumMode {
  /** The exact mode name passed to `apertium` (e.g. "eng-spa", "es-pt_BR"). */
  mode: string;
  source: Language;
  target: Language;
  /** Regional variant of the mode (e.g. "BR" in "es-pt_BR"), if any. */
  variant?: string;
}

/** A direct mode or a chain of modes through a pivot language. */
export interface ApertiumRoute {
  source: Language;
  target: Language;
  modes: string[];
  pivot?: Language;
}

const MODE_NAME = /^([a-z]{2,3})(?:_([A-Za-z]+))?-([a-z]{2,3})(?:_([A-Za-z]+))?$/;

/**
 * Reads mode names (one per line, as printed by `apertium -l` or the file names of the modes
 * directory) into language pairs. Names that are not "<src>-<tgt>" (e.g. "eco-es-fr", tagger or
 * debug modes) or name languages the service does not offer are ignored.
 */
export function parseApertiumModes(names: Iterable<string>): ApertiumMode[] {
  const modes: ApertiumMode[] = [];
  for (const raw of names) {
    const name = raw.trim().replace(/\.mode$/, "");
    const match = MODE_NAME.exec(name);
    if (!match) continue;
    const source = APERTIUM_LANGUAGE_CODES[match[1] ?? ""];
    const target = APERTIUM_LANGUAGE_CODES[match[3] ?? ""];
    if (!source || !target || source === target) continue;
    const variant = match[4] ?? match[2];
    modes.push({ mode: name, source, target, ...(variant === undefined ? {} : { variant }) });
  }
  return modes;
}

/**
 * The routes the modes allow: each direct pair (a mode without a regional variant preferred), then
 * pairs reachable in two steps through one of `pivots` (tried in order) when there is no direct mode.
 */
export function apertiumRoutes(modes: readonly ApertiumMode[], pivots: readonly Language[] = ["Spanish"]): ApertiumRoute[] {
  const direct = new Map<string, ApertiumMode>();
  for (const mode of [...modes].sort((a, b) => Number(a.variant !== undefined) - Number(b.variant !== undefined) || a.mode.localeCompare(b.mode))) {
    const key = `${mode.source}>${mode.target}`;
    if (!direct.has(key)) direct.set(key, mode);
  }
  const routes: ApertiumRoute[] = [];
  for (const source of LANGUAGES) {
    for (const target of LANGUAGES) {
      if (source === target) continue;
      const mode = direct.get(`${source}>${target}`);
      if (mode) {
        routes.push({ source, target, modes: [mode.mode] });
        continue;
      }
      for (const pivot of pivots) {
        if (pivot === source || pivot === target) continue;
        const first = direct.get(`${source}>${pivot}`);
        const second = direct.get(`${pivot}>${target}`);
        if (first && second) {
          routes.push({ source, target, modes: [first.mode, second.mode], pivot });
          break;
        }
      }
    }
  }
  return routes;
}

export interface ApertiumOptions {
  logger: Logger;
  /** The apertium program, default "apertium" from PATH. */
  binary?: string;
  /** Where mode files are read from when `apertium -l` fails. Default /usr/share/apertium/modes. */
  modesDir?: string;
  /** Languages to pivot through when there is no direct mode, tried in order. Default ["Spanish"]. */
  pivots?: readonly Language[];
  /** Largest piece of text sent to one apertium call. Default 4000 characters. */
  maxChunkChars?: number;
  /** Time limit for one apertium call. Default 120 s. */
  timeoutMs?: number;
  /** How many apertium calls run at once for one text. Default 2. */
  concurrency?: number;
  /** Engine id, default "apertium". */
  id?: string;
}

/** More output than this from one chunk is a translator gone wrong. */
const MAX_OUTPUT_BYTES = 64 * 1024 * 1024;

/** Paragraph breaks in engine output (whitespace with two or more line breaks). */
const OUTPUT_PARAGRAPH_BREAK = /[^\S\n]*\n(?:[^\S\n]*\n)+\s*/;

/**
 * Offline rule-based translation with Apertium. Detects the installed modes when created and
 * offers their pairs, plus pairs through a pivot language (Spanish by default). Text goes through
 * standard input with the plain-text deformatter (`-f txt`), so brackets, `^`, `$`, `/`, `\`,
 * `<`, `>`, `@`, `*`, `#` come through as text. Throws MtEngineUnavailableError when apertium does
 * not run or offers no pair among the service's languages.
 */
export async function createApertiumEngine(options: ApertiumOptions): Promise<MtEngine> {
  const id = options.id ?? "apertium";
  const binary = options.binary ?? "apertium";
  const maxChunkChars = options.maxChunkChars ?? 4000;
  const timeoutMs = options.timeoutMs ?? 120_000;
  const concurrency = options.concurrency ?? 2;
  if (!Number.isInteger(maxChunkChars) || maxChunkChars < 100) throw new MtConfigError("The Apertium chunk size must be a whole number of at least 100 characters.");
  if (!(timeoutMs > 0)) throw new MtConfigError("The Apertium time limit must be positive.");
  if (!Number.isInteger(concurrency) || concurrency < 1) throw new MtConfigError("The Apertium concurrency must be a whole number of at least 1.");
  const log = options.logger.child({ component: "mt", engine: id });

  const names = await listModes(binary, options.modesDir ?? "/usr/share/apertium/modes", log);
  const modes = parseApertiumModes(names);
  const routes = apertiumRoutes(modes, options.pivots ?? ["Spanish"]);
  if (routes.length === 0) {
    throw new MtEngineUnavailableError(
      names.length === 0 ? "Apertium is not installed or has no language pairs." : "Apertium has no language pair for the languages this service offers.",
    );
  }
  const byPair = new Map(routes.map((r) => [`${r.source}>${r.target}`, r]));
  const capabilities: MtCapabilities = {
    pairs: routes.map((r): MtPair => ({ source: r.source, target: r.target, ...(r.pivot === undefined ? {} : { pivot: r.pivot }), quality: "rule-based" })),
  };
  log.info({ modes: modes.map((m) => m.mode), pairs: routes.length }, "apertium modes detected");

  let inputs = 0;
  async function runMode(mode: string, text: string, signal: AbortSignal, scratchDir: string): Promise<string> {
    const input = join(scratchDir, `input-${++inputs}.txt`);
    await writeFile(input, text, { encoding: "utf8", mode: 0o600 });
    try {
      const result = await runProcess(binary, ["-u", "-f", "txt", mode], {
        // a file, not a pipe: the `apertium` wrapper script re-opens /dev/stdin
        stdinFile: input,
        // ENGINE_NICE from the first instruction of every program the script starts
        niceFromStart: true,
        collectStdout: true,
        maxStdoutBytes: MAX_OUTPUT_BYTES,
        stderrLines: 20,
        timeoutMs,
        signal,
      });
      const failure = apertiumFailure(result, mode);
      if (failure) throw failure;
      return result.stdout.toString("utf8");
    } finally {
      await rm(input, { force: true });
    }
  }

  async function runRoute(route: ApertiumRoute, text: string, signal: AbortSignal, scratchDir: string): Promise<string> {
    let current = text;
    for (const mode of route.modes) current = await runMode(mode, current, signal, scratchDir);
    return current;
  }

  /** Translates one chunk; its paragraphs come back separated by the original breaks. */
  async function translateChunk(route: ApertiumRoute, chunk: TranslationChunk, signal: AbortSignal, scratchDir: string): Promise<string> {
    const output = await runRoute(route, chunk.text, signal, scratchDir);
    const parts = output.trim().split(OUTPUT_PARAGRAPH_BREAK);
    if (parts.length === chunk.paragraphs.length) return joinParagraphs(parts.map((p, i) => tidySpacing(p, chunk.paragraphs[i] ?? "")), chunk.breaks);
    // Apertium merged or split paragraphs: translate them one by one so the layout stays right.
    log.debug({ expected: chunk.paragraphs.length, got: parts.length }, "paragraph count changed, translating paragraphs separately");
    const single: string[] = [];
    for (const paragraph of chunk.paragraphs) single.push(tidySpacing((await runRoute(route, paragraph, signal, scratchDir)).trim(), paragraph));
    return joinParagraphs(single, chunk.breaks);
  }

  async function translate(request: TranslationRequest): Promise<string> {
    const { source, target } = request;
    if (source === target) return request.text;
    const route = byPair.get(`${source}>${target}`);
    if (!route) {
      throw new TranslationNotSupportedError(source, target, `Apertium cannot translate from ${source} to ${target}: no installed language pair covers it.`);
    }
    if (request.signal?.aborted) throw cancelled(request.signal.reason);
    const plan = planChunks(normalizeTranslationInput(request.text), maxChunkChars);
    const inner = new AbortController();
    const signal = request.signal ? AbortSignal.any([request.signal, inner.signal]) : inner.signal;
    // private (0700): the text of the task is written here for the translator to read
    const scratchDir = await mkdtemp(join(tmpdir(), "voiceloc-mt-"));
    try {
      const translated = await mapInOrder(plan.chunks, concurrency, async (chunk, index) => {
        const out = await translateChunk(route, chunk, signal, scratchDir);
        log.debug({ source, target, chunk: index, of: plan.chunks.length, chars: chunk.text.length }, "translated chunk");
        return out;
      });
      return assembleChunks(plan, translated);
    } catch (error) {
      inner.abort();
      if (request.signal?.aborted && !(error instanceof TranslationError && error.code === "TRANSLATION_CANCELLED")) throw cancelled(error);
      throw error;
    } finally {
      await rm(scratchDir, { recursive: true, force: true });
    }
  }

  return { id, capabilities: () => capabilities, translate };
}

/**
 * Apertium adds blanks around sentence ends (a space after a line break, two spaces after a full
 * stop through a pivot); removes the kinds of extra spacing the original paragraph did not have.
 */
function tidySpacing(output: string, original: string): string {
  let text = output;
  if (!/ {2}/.test(original)) text = text.replace(/ {2,}/g, " ");
  if (!/[^\S\n]\n/.test(original)) text = text.replace(/[^\S\n]+\n/g, "\n");
  if (!/\n[^\S\n]/.test(original)) text = text.replace(/\n[^\S\n]+/g, "\n");
  return text;
}

function cancelled(cause: unknown): TranslationError {
  return new TranslationError("TRANSLATION_CANCELLED", "Translation was cancelled.", { cause });
}

/** Mode names from `apertium -l`, or from the modes directory when that fails. */
async function listModes(binary: string, modesDir: string, log: Logger): Promise<string[]> {
  const result = await runProcess(binary, ["-l"], { collectStdout: true, maxStdoutBytes: 1024 * 1024, timeoutMs: 30_000 });
  if (!result.spawnError && result.exitCode === 0) {
    return result.stdout
      .toString("utf8")
      .split("\n")
      .map((l) => l.trim())
      .filter((l) => l !== "");
  }
  if (result.spawnError) {
    throw new MtEngineUnavailableError(`The Apertium translator could not be started (${result.spawnError.code ?? result.spawnError.message}).`, { cause: result.spawnError });
  }
  log.warn({ exitCode: result.exitCode, stderr: result.stderrTail }, "apertium -l failed, reading the modes directory");
  try {
    return (await readdir(modesDir)).filter((f) => f.endsWith(".mode"));
  } catch (cause) {
    throw new MtEngineUnavailableError("Apertium runs but could not list its language pairs.", { cause });
  }
}

function apertiumFailure(result: ProcessResult, mode: string): Error | undefined {
  if (result.spawnError) {
    return new MtEngineUnavailableError(`The Apertium translator could not be started (${result.spawnError.code ?? result.spawnError.message}).`, { cause: result.spawnError });
  }
  if (result.aborted) return cancelled(undefined);
  if (result.timedOut) {
    return new TranslationError("TRANSLATION_FAILED", "The Apertium translator took too long and was stopped.", { details: result.stderrTail });
  }
  if (ranOutOfMemory(result)) {
    return new TranslationError("TRANSLATION_OUT_OF_MEMORY", `The Apertium translator stopped: ${outOfMemoryReason(result.memoryLimitBytes)}.`, { details: result.stderrTail });
  }
  if (result.exitCode !== 0) {
    const last = result.stderrTail.at(-1);
    return new TranslationError("TRANSLATION_FAILED", finishSentence(`The Apertium translator failed (language pair ${mode})${last === undefined ? "" : `: ${last}`}`), {
      details: result.stderrTail,
    });
  }
  if (result.stdoutTruncated) return new TranslationError("TRANSLATION_FAILED", "The Apertium translator produced more output than expected.");
  return undefined;
}
