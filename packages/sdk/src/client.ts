/**
 * The typed client: openapi-fetch over the generated `paths`, with the API key sent on every request
 * and every error answer thrown as a typed error (so `data` is always set on what returns).
 */
import createFetchClient, { type Client, type Middleware } from "openapi-fetch";
import type { paths } from "./generated/api.ts";
import { ApiError, ConnectionError, describeCause, errorFromFetchResponse } from "./errors.ts";
import { upload, type UploadInput, type UploadOptions, type UploadRecord } from "./upload.ts";
import { waitFor, type TaskRecord, type WaitOptions } from "./wait.ts";
import { download, type DownloadResult } from "./download.ts";

export interface ClientOptions {
  /** Where the service answers, e.g. `http://localhost:8080` (no `/v1`). */
  baseUrl: string;
  /** An API key (sent as the `API-KEY` header). */
  apiKey: string;
  /** A fetch of your own (tests, proxies); the global one by default. */
  fetch?: typeof globalThis.fetch;
  /** Extra headers for every request. */
  headers?: Record<string, string>;
}

export interface VoicelocClient extends Client<paths> {
  readonly baseUrl: string;
  /** Sends a request with the client's credentials (paths the generated types do not know, streams). */
  raw(path: string, init?: RequestInit): Promise<Response>;
  /** Uploads a local file path, Blob, bytes or stream (`POST /v1/uploads`); use its `file` (`upload:<id>`) in a task. */
  upload(input: UploadInput, options?: UploadOptions): Promise<UploadRecord>;
  /** Follows a task until it completes (resolves with the final record) or fails (throws TaskFailedError). */
  waitFor<R extends TaskRecord>(record: R, options?: WaitOptions<R>): Promise<R>;
  /** Saves a result URL (`localized_file`, `subtitle_file`, `audio_url`) to a file path. */
  download(url: string, path: string, options?: { signal?: AbortSignal }): Promise<DownloadResult>;
}

export function createClient(options: ClientOptions): VoicelocClient {
  const baseUrl = options.baseUrl.replace(/\/+$/, "");
  const fetchImpl = options.fetch ?? globalThis.fetch;
  const headers = { ...options.headers, "API-KEY": options.apiKey };
  const throwOnError: Middleware = {
    async onResponse({ request, response }) {
      if (response.ok) return undefined;
      throw await errorFromFetchResponse(response, request.method);
    },
    onError({ error }) {
      if (error instanceof Error && error.name === "AbortError") return error;
      return new ConnectionError(`could not reach ${baseUrl}: ${describeCause(error)}`, { cause: error });
    },
  };
  const api = createFetchClient<paths>({ baseUrl, headers, fetch: (request: Request) => fetchImpl(request) });
  api.use(throwOnError);

  const raw = async (path: string, init: RequestInit = {}): Promise<Response> => {
    const merged = new Headers(init.headers);
    for (const [name, value] of Object.entries(headers)) if (!merged.has(name)) merged.set(name, value);
    try {
      return await fetchImpl(new URL(path, `${baseUrl}/`).toString(), { ...init, headers: merged });
    } catch (error) {
      if (error instanceof Error && error.name === "AbortError") throw error;
      throw new ConnectionError(`could not reach ${baseUrl}: ${describeCause(error)}`, { cause: error });
    }
  };

  const client: VoicelocClient = Object.assign(api, {
    baseUrl,
    raw,
    upload: (input: UploadInput, uploadOptions?: UploadOptions) => upload(raw, input, uploadOptions),
    waitFor: <R extends TaskRecord>(record: R, waitOptions?: WaitOptions<R>) => waitFor(raw, record, waitOptions),
    download: (url: string, path: string, downloadOptions?: { signal?: AbortSignal }) =>
      download(fetchImpl, new URL(url, `${baseUrl}/`).toString(), path, downloadOptions),
  });
  return client;
}

/**
 * The `data` of an openapi-fetch result. The client throws on every error answer, so `data` is
 * always there for a success; this only narrows the type (`const book = unwrap(await client.POST(…))`).
 */
export function unwrap<T>(result: { data?: T; error?: unknown; response: Response }): T {
  if (result.data === undefined) throw new ApiError(result.response.status, result.error ?? null, { method: "?", url: result.response.url });
  return result.data;
}
