import { LANGUAGE_CODES, type Language, type LexiconWire } from "@voiceloc/contracts";
import { checkLexicons, LexiconNotSpeakableError, type PhonemeSupport } from "@voiceloc/engines";
import type { GatewayDeps } from "../deps.ts";
import { ValueError422 } from "../http/errors.ts";
import { lexiconRepository } from "./repository.ts";

/** The voice a request will be spoken in, as far as the gateway knows it. */
export interface SpeakingVoice {
  /** The voice named in the request (a preset voice or `clone:<id>`); null: the language's default voice. */
  voice: string | null | undefined;
  /** Spoken in a cloned voice (a `clone:<id>` voice, or one made for the task). */
  cloned: boolean;
}

/** Whether a language tag (`xml:lang`, BCP 47) is of `language`: its primary subtag is the ISO 639-1 code. */
export function tagIsOf(tag: string, language: Language): boolean {
  const primary = tag.split(/[-_]/)[0]?.toLowerCase() ?? "";
  const code = LANGUAGE_CODES[language];
  return primary === code || (language === "Chinese" && (primary === "cmn" || primary === "yue"));
}

async function phonemeSupport(deps: GatewayDeps, language: Language, voice: SpeakingVoice): Promise<PhonemeSupport | null> {
  if (voice.cloned) return "none";
  if (voice.voice) return voice.voice.startsWith("espeak:") ? "espeak" : "none";
  if (!deps.voiceCatalog) return null;
  try {
    const chosen = (await deps.voiceCatalog.voices()).find((entry) => entry.language === language && entry.default);
    return chosen ? (chosen.engine === "espeak" ? "espeak" : "none") : null;
  } catch {
    // no catalogue now: the speaking process checks the entries against the voice it uses
    return null;
  }
}

/**
 * The caller's lexicons named by `ids`, as the descriptors that travel to the speaking process, in the
 * order given (a repeated id counts once). An unknown id and another owner's lexicon are the one 422 at
 * `["body", "lexicons", i]`; a lexicon of another language than the speech is a 422 there too; entries
 * the voice cannot say (a phoneme-only entry with a voice that takes no phonemes) are a 422 at
 * `["body", "lexicons"]` naming them.
 */
export async function resolveLexicons(
  deps: GatewayDeps,
  owner: string,
  ids: readonly string[] | undefined,
  language: Language,
  voice: SpeakingVoice,
): Promise<LexiconWire[]> {
  if (!ids || ids.length === 0) return [];
  const repo = await lexiconRepository(deps.store);
  const found: LexiconWire[] = [];
  const seen = new Set<string>();
  for (const [index, id] of ids.entries()) {
    if (seen.has(id)) continue;
    seen.add(id);
    const doc = await repo.getOwned(owner, id);
    const loc = ["body", "lexicons", index];
    if (!doc) throw new ValueError422(loc, `unknown lexicon '${id}': no lexicon of this account has this id; GET /v1/lexicons lists this account's lexicons`, id);
    if (doc.language !== language) throw new ValueError422(loc, `lexicon '${doc.name}' is for ${doc.language}, but this speech is in ${language}`, id);
    found.push({ id: doc.id, name: doc.name, entries: doc.entries });
  }
  const phonemes = await phonemeSupport(deps, language, voice);
  if (phonemes !== null) {
    try {
      checkLexicons(found, phonemes);
    } catch (error) {
      if (error instanceof LexiconNotSpeakableError) throw new ValueError422(["body", "lexicons"], error.message, [...ids]);
      throw error;
    }
  }
  return found;
}
