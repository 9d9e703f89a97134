export { createSubtitleService, type SubtitleService, type SubtitleServiceOptions } from "./service.ts";
export {
  createSubtitleHandler,
  DEFAULT_SUBTITLE_MAX_SECONDS,
  subtitleResumedProgress,
  type BurnInSettings,
  type SubtitleFetchSettings,
  type SubtitlePipelineDeps,
} from "./pipeline.ts";
export { buildCues, cueRulesFor, CUE_RULES, DEFAULT_CUE_RULES, textLength, type Cue, type CueRules, type CueSegment, type TimedWord } from "./cues.ts";
export { formatTimestamp, parseSubtitles, writeSrt, writeSubtitles, writeVtt, type SubtitleFormat } from "./formats.ts";
export { ISO_639_2, SUBTITLE_FONTS } from "./languages.ts";
export { burnInLayout, DEFAULT_BURN_IN_FONT_SIZE, type BurnInLayout } from "./layout.ts";
export { NO_SPEECH_MESSAGE } from "./errors.ts";
