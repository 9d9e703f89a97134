export type { BlobSource, BlobStat, BlobStore, PutOptions, PutResult, ReadRange } from "./types.ts";
export {
  BlobChangedError,
  BlobError,
  BlobKeyConflictError,
  BlobNotFoundError,
  BlobRangeError,
  BlobStoreError,
  InvalidBlobKeyError,
  InvalidContentTypeError,
  InvalidSigningSecretError,
  isBlobError,
  isBlobNotFoundError,
} from "./errors.ts";
export type { BlobErrorCode } from "./errors.ts";
export {
  ACCOUNT_KEY_SEGMENT_LENGTH,
  MAX_BLOB_KEY_LENGTH,
  accountKeySegment,
  UPLOADS_PREFIX,
  uploadBlobKey,
  isValidBlobKey,
  validateBlobKey,
  validateBlobPrefix,
} from "./keys.ts";
export {
  AUDIO_BOOK_STREAM_PART,
  AUDIO_BOOK_STREAM_PLAYLIST,
  AUDIO_BOOK_STREAMS_PREFIX,
  audioBookStreamKey,
  audioBookStreamPrefix,
  deleteAudioBookStream,
} from "./streams.ts";
export { DEFAULT_CONTENT_TYPE, contentRange, contentTypeFor, parseRange } from "./range.ts";
export type { ParsedRange } from "./range.ts";
export { MIN_SIGNING_SECRET_LENGTH, SIGNED_FILES_PATH, signBlobUrl, verifyBlobSignature } from "./sign.ts";
export type { SignBlobUrlOptions, SigningSecrets, VerifyBlobSignatureOptions, VerifyBlobSignatureResult } from "./sign.ts";
export { blobRootFor, createFsBlobStore } from "./fs.ts";
export type { FsBlobStoreOptions } from "./fs.ts";
export { createNatsBlobStore } from "./nats.ts";
export type { NatsBlobStoreOptions } from "./nats.ts";
