import type { Capabilities, TaskKind } from "./bus.ts";
import type { Language } from "./languages.ts";

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
  const needsRecognition = req.kind === "voice-stream" || req.kind === "subtitle";
  const needsSynthesis = req.kind === "audiobook" || req.kind === "voice-stream";
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
