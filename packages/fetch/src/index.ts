export { FetchRefusedError, isFetchRefusedError, type FetchRefusedCode } from "./errors.ts";
export { checkReference, type CheckReferenceOptions } from "./check.ts";
export { classifyReference, MAX_REFERENCE_LENGTH, type ClassifiedReference, type ClassifyOptions } from "./classify.ts";
export {
  classifyAddress,
  isPublicAddress,
  isMetadataAddress,
  isMetadataHostname,
  METADATA_HOSTNAMES,
  parseAllowedHosts,
  isAllowedHost,
  type AddressClass,
  type AllowedHost,
} from "./address.ts";
export { checkHost, pinnedLookup, systemResolver, type Resolver, type ResolvedAddress, type GuardOptions } from "./guard.ts";
export { GCS_INTEROP_ENDPOINT, type ObjectStoreOptions } from "./object.ts";
export { fetchToFile, FETCH_DEFAULTS, type FetchOptions, type FetchResult } from "./fetch.ts";
export {
  FILE_NOT_AVAILABLE,
  MEDIA_ROOT_SCOPES,
  UPLOAD_ID,
  accountMediaFolder,
  mediaRootFor,
  type MediaRootScope,
} from "./media.ts";
