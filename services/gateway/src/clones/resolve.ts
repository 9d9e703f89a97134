import type { ClonedVoiceWire, Language } from "@voiceloc/contracts";
import type { GatewayDeps } from "../deps.ts";
import { ValueError422 } from "../http/errors.ts";
import { CLONE_VOICE_PREFIX, cloneDescriptor } from "./repository.ts";

/** Whether a voice name names a cloned voice (`clone:<id>`), whoever's. */
export function isCloneVoice(voice: string | null | undefined): voice is string {
  return typeof voice === "string" && voice.startsWith(CLONE_VOICE_PREFIX);
}

/**
 * The caller's clone a voice name names, as the descriptor that travels to the speaking process; null
 * when the name is not `clone:<id>` (a preset voice, checked elsewhere). An unknown id and another
 * owner's clone are the one 422 at `loc`, worded as an unknown preset voice is; a clone that does not
 * speak `language` is a 422 there too.
 */
export async function resolveVoiceClone(
  deps: GatewayDeps,
  owner: string,
  voice: string | null | undefined,
  loc: Array<string | number>,
  language?: Language,
): Promise<ClonedVoiceWire | null> {
  if (!isCloneVoice(voice)) return null;
  const id = voice.slice(CLONE_VOICE_PREFIX.length);
  const doc = id.length > 0 && id.length <= 64 ? await deps.clones?.repo.getOwned(owner, id) : null;
  if (!doc) {
    throw new ValueError422(loc, `unknown voice '${voice}': no cloned voice of this account has this id; GET /v1/voices/clones lists this account's cloned voices`, voice);
  }
  if (language && !doc.languages.includes(language)) {
    throw new ValueError422(loc, `cloned voice '${voice}' speaks ${doc.languages.join(", ") || "no language"}, not ${language}`, voice);
  }
  return cloneDescriptor(doc);
}
