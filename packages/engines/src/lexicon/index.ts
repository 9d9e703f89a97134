export { parsePls, PLS_LIMITS, LexiconError, type LexiconEntry, type ParsedLexicon } from "./pls.ts";
export { applyLexicons, checkLexicons, LexiconNotSpeakableError, type LexiconForSpeech, type PhonemeSupport } from "./apply.ts";
export { ipaToEspeak } from "./ipa.ts";
