export { createAudioBookService, type AudioBookService, type AudioBookServiceOptions } from "./service.ts";
export {
  AUDIO_BOOK_MP3,
  audioBookResumedProgress,
  chunkCheckpoint,
  createAudioBookHandler,
  type AudioBookFetchOptions,
  type AudioBookPipelineOptions,
  type ChunkDoneInfo,
} from "./pipeline.ts";
export { BookTextError, chunkText, decodeText, hasWords, normaliseText, speakableText } from "./text.ts";
export { joinMp3Chunks, type JoinedMp3 } from "./join.ts";
export { ChunkQueue, runLanes, splitByWeight, type LaneOptions, type SpokenChunk } from "./lanes.ts";
export { coreCount, runPool } from "./pool.ts";
