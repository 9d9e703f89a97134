import type { Language, TaskKind } from "@voiceloc/contracts";
import type { TaskDoc } from "./repository.ts";

export type { TaskKind } from "@voiceloc/contracts";

export const COLLECTION_OF: Record<TaskKind, string> = {
  audiobook: "audio_books",
  "voice-stream": "voice_streams",
  subtitle: "subtitle_jobs",
};

export interface AudioBookDoc extends TaskDoc {
  file: string;
  name: string;
  source_language: Language;
  target_language: Language;
  audio_book_cover: string | null;
  use_voice_clone: boolean;
  preset_voice_name: string | null;
  voice_clone_sample: string | null;
}

export interface VoiceStreamDoc extends TaskDoc {
  file: string;
  source_language: Language;
  target_language: Language;
  voice: string | null;
}

export interface SubtitleDoc extends TaskDoc {
  file: string;
  source_language: Language;
  target_language: Language;
  mode: "burn_in" | "side_file";
  subtitle_format: "srt" | "vtt";
  /** Blob key of the subtitle file, signed on read. */
  subtitle_key: string | null;
}

/** Turns blob keys into signed download URLs when a record is read. */
export interface UrlSigner {
  sign(key: string): string;
}

/** Publishes a stored record's work to the bus (or nowhere, while no workers exist). */
export interface TaskDispatcher {
  dispatch(kind: TaskKind, doc: TaskDoc): Promise<void>;
}

export function newTaskFields(accountId: string, now: Date): Omit<TaskDoc, "id"> {
  const iso = now.toISOString();
  return {
    account_id: accountId,
    task_status: "queued",
    task_progress: 0,
    task_error: null,
    result_key: null,
    seq: 0,
    published: false,
    date_created: iso,
    date_updated: iso,
  };
}

function taskView(doc: TaskDoc, signer: UrlSigner) {
  return {
    task_status: doc.task_status,
    task_progress: doc.task_progress,
    task_error: doc.task_error,
    localized_file: doc.result_key ? signer.sign(doc.result_key) : null,
    date_created: doc.date_created,
    date_updated: doc.date_updated,
  };
}

export function presentAudioBook(doc: AudioBookDoc, signer: UrlSigner) {
  return {
    id: doc.id,
    file: doc.file,
    name: doc.name,
    source_language: doc.source_language,
    target_language: doc.target_language,
    audio_book_cover: doc.audio_book_cover,
    ...taskView(doc, signer),
  };
}

export function presentVoiceStream(doc: VoiceStreamDoc, signer: UrlSigner) {
  return {
    id: doc.id,
    file: doc.file,
    source_language: doc.source_language,
    target_language: doc.target_language,
    ...taskView(doc, signer),
  };
}

export function presentSubtitle(doc: SubtitleDoc, signer: UrlSigner) {
  return {
    id: doc.id,
    file: doc.file,
    source_language: doc.source_language,
    target_language: doc.target_language,
    mode: doc.mode,
    subtitle_format: doc.subtitle_format,
    ...taskView(doc, signer),
    subtitle_file: doc.subtitle_key ? signer.sign(doc.subtitle_key) : null,
  };
}
