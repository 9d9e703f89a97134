import type { Capabilities, CapabilityKind, TaskKind } from "./bus.ts";
import type { Language } from "./languages.ts";

/** What each kind of work uses of the engines (cloning and preset voices go with synthesis). */
export const CAPABILITY_USES: Readonly<Record<CapabilityKind, { synthesis: boolean; recognition: boolean; translation: boolean }>> = {
  synthesis: { synthesis: true, recognition: false, translation: false },
  audiobook: { synthesis: true, recognition: false, translation: true },
  "voice-stream": { synthesis: true, recognition: true, translation: true },
  subtitle: { synthesis: false, recognition: true, translation: true },
};

/**
 * The table one kind of work answers: the process's whole table less what the kind does not use
 * (a subtitle worker claims no synthesis, a synthesis worker no translation or recognition), so a
 * reader never takes one service's engines for another's.
 */
export function capabilitiesFor(kind: CapabilityKind, caps: Capabilities): Capabilities {
  const uses = CAPABILITY_USES[kind];
  return {
    synthesis: {
      languages: uses.synthesis ? [...caps.synthesis.languages] : [],
      ...(caps.synthesis.engines === undefined ? {} : { engines: uses.synthesis ? caps.synthesis.engines.map((c) => ({ language: c.language, engines: [...c.engines] })) : [] }),
    },
    recognition: {
      languages: uses.recognition ? [...caps.recognition.languages] : [],
      ...(caps.recognition.engines === undefined ? {} : { engines: uses.recognition ? caps.recognition.engines.map((c) => ({ language: c.language, engines: [...c.engines] })) : [] }),
    },
    translation: { pairs: uses.translation ? caps.translation.pairs.map((p) => ({ ...p })) : [] },
    cloning: uses.synthesis ? { available: caps.cloning.available, languages: [...caps.cloning.languages] } : { available: false, languages: [] },
    voices: uses.synthesis ? caps.voices.map((v) => ({ ...v })) : [],
  };
}

/**
 * The union of several kinds' tables: a language, pair or voice is listed when at least one of them
 * offers it. Order is kept (first table first, later ones only add what is new), so the tables of one
 * process's kinds merge back into exactly that process's table.
 */
export function mergeCapabilities(tables: readonly Capabilities[]): Capabilities {
  const languages = (pick: (c: Capabilities) => readonly Language[]) => [...new Set(tables.flatMap(pick))];
  const pairs: Capabilities["translation"]["pairs"] = [];
  const voices: Capabilities["voices"] = [];
  const chains: Capabilities["recognition"]["engines"] = [];
  const speechChains: Capabilities["synthesis"]["engines"] = [];
  for (const table of tables) {
    const seenSpeech = new Set(speechChains.map((c) => c.language));
    speechChains.push(...(table.synthesis.engines ?? []).filter((c) => !seenSpeech.has(c.language)));
    const seenChains = new Set(chains.map((c) => c.language));
    chains.push(...(table.recognition.engines ?? []).filter((c) => !seenChains.has(c.language)));
    const seenPairs = new Set(pairs.map((p) => `${p.source}>${p.target}`));
    pairs.push(...table.translation.pairs.filter((p) => !seenPairs.has(`${p.source}>${p.target}`)));
    const seenVoices = new Set(voices.map((v) => v.name));
    voices.push(...table.voices.filter((v) => !seenVoices.has(v.name)));
  }
  return {
    synthesis: { languages: languages((c) => c.synthesis.languages), ...(tables.some((t) => t.synthesis.engines !== undefined) ? { engines: speechChains } : {}) },
    recognition: { languages: languages((c) => c.recognition.languages), ...(tables.some((t) => t.recognition.engines !== undefined) ? { engines: chains } : {}) },
    translation: { pairs },
    cloning: { available: tables.some((c) => c.cloning.available), languages: languages((c) => c.cloning.languages) },
    voices,
  };
}

export interface TaskRequirements {
  kind: TaskKind;
  source: Language;
  target: Language;
  /** Requested preset voice (audio books: preset_voice_name; voice streams: voice). */
  voice?: string | null | undefined;
  voiceField?: string;
  useVoiceClone?: boolean | undefined;
}

/** One reason a task cannot be done with the configured engines, tied to the request field. */
export interface CapabilityProblem {
  field: string;
  message: string;
  input: unknown;
}

const list = (languages: readonly string[]) => (languages.length > 0 ? languages.join(", ") : "none");

/**
 * What stands between a task and the configured engines: recognition of the source (speech
 * inputs), translation of the pair (when the languages differ), synthesis of the target
 * (spoken outputs), the preset voice, and cloning. Empty when the task can be done.
 */
export function capabilityProblems(caps: Capabilities, req: TaskRequirements): CapabilityProblem[] {
  const problems: CapabilityProblem[] = [];
  const needsRecognition = CAPABILITY_USES[req.kind].recognition;
  const needsSynthesis = CAPABILITY_USES[req.kind].synthesis;
  if (needsRecognition && !caps.recognition.languages.includes(req.source)) {
    problems.push({
      field: "source_language",
      message: `speech recognition in ${req.source} is not available with the configured engines (recognition languages: ${list(caps.recognition.languages)})`,
      input: req.source,
    });
  }
  if (req.source !== req.target && !caps.translation.pairs.some((p) => p.source === req.source && p.target === req.target)) {
    const targets = caps.translation.pairs.filter((p) => p.source === req.source).map((p) => p.target);
    problems.push({
      field: "target_language",
      message: `translation from ${req.source} to ${req.target} is not available with the configured engines (from ${req.source}: ${list(targets)})`,
      input: req.target,
    });
  }
  if (needsSynthesis && !caps.synthesis.languages.includes(req.target)) {
    problems.push({
      field: "target_language",
      message: `speech synthesis in ${req.target} is not available with the configured engines (synthesis languages: ${list(caps.synthesis.languages)})`,
      input: req.target,
    });
  }
  if (needsSynthesis && req.voice) {
    const voice = caps.voices.find((v) => v.name === req.voice);
    if (!voice) {
      problems.push({
        field: req.voiceField ?? "voice",
        message: `unknown preset voice '${req.voice}'; GET /v1/voices?language=${req.target} lists the voices for ${req.target}`,
        input: req.voice,
      });
    } else if (voice.language !== req.target) {
      problems.push({
        field: req.voiceField ?? "voice",
        message: `preset voice '${req.voice}' speaks ${voice.language}, not ${req.target}`,
        input: req.voice,
      });
    }
  }
  if (req.useVoiceClone && !caps.cloning.available) {
    problems.push({
      field: "use_voice_clone",
      message: "voice cloning is not available: no cloning-capable speech engine is configured",
      input: true,
    });
  }
  return problems;
}
