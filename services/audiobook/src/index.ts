export {
  audioBookResumedProgress,
  chunkCheckpoint,
  createAudioBookService,
  type AudioBookFetchOptions,
  type AudioBookService,
  type AudioBookServiceOptions,
  type ChunkDoneInfo,
} from "./service.ts";
export { BookTextError, chunkText, decodeText, hasWords, normaliseText, speakableText } from "./text.ts";
export { buildMp3CopyConcatArgs, joinMp3Chunks } from "./join.ts";
export { coreCount, runPool } from "./pool.ts";
