/** The decisions on what the contract leaves open, stated in the OpenAPI document (and docs/api.md). */
export const API_DESCRIPTION = `
HTTP/JSON API for AI voice and language processing: audio books from text files, voice streams
(speech to translated speech), video subtitles and speech synthesis. All bodies are JSON, except
the file sent to \`POST /v1/uploads\`.

## Authentication
Every \`/v1\` operation needs a credential: an API key in the \`API-KEY\` header, or
\`Authorization: Bearer <token>\` carrying either an API key or an access token (a JWT signed
HS256 with the server's secret, or RS256/ES256 with a key from the configured JWKS; \`exp\` is
required unless the operator turned that off, \`exp\` and \`nbf\` are enforced and \`sub\` names the
account). This includes \`POST /v1/videos/subtitle\`. Missing or wrong credentials → **401**
\`{"detail": "…"}\` with a constant \`WWW-Authenticate: Bearer realm="voiceloc"\` (plus
\`error="invalid_token"\` for a bad credential); the reason is only in \`detail\`. An access token
always acts in its account's live space: the sandbox space is reached with a sandbox key (\`vl_test_…\`)
only, so a token whose \`sub\` starts with \`sandbox:\` is a **401**, as is one whose \`sub\` is empty,
longer than 255 characters or holds control characters.

## Records and tasks
Creating an audio book, a voice stream or a subtitle job stores the record and starts its task.
\`task_status\` is one of \`queued\` → \`processing\` → \`completed\` | \`failed\`; \`task_progress\`
is a percentage from 0 to 100 that never moves backwards; a failed record says why in
\`task_error\` (an extension field, null otherwise). \`localized_file\` (and \`subtitle_file\`) is a
signed download URL valid for 1 hour from the read that returned it; read the record again for a
fresh one. Records belong to the account that created them: another account's id answers **404**.

## Live progress (Server-Sent Events)
\`GET …/{id}/events\` of an audio book, voice stream or subtitle job streams \`text/event-stream\`: the
current state as \`event: progress\` (\`data: {"id","task_status","task_progress","date_updated"}\`),
one \`progress\` event per visible change, then \`event: completed\` or \`event: failed\` whose \`data\`
is the record exactly as GET returns it; then the server closes. A finished record gets its final event
at once. Event ids are derived from the record (progress in hundredths × 4 + status rank), rise strictly
and are the same on every gateway: reconnect anywhere with \`Last-Event-ID\` and only newer states come;
**204** when it already covers the final event. \`: heartbeat\` comments every 15 s (\`SSE_HEARTBEAT_MS\`);
at most 100 open streams per account across every gateway (\`SSE_MAX_STREAMS_PER_ACCOUNT\`), then **429**.

## Lists
Lists are newest first and remain plain JSON arrays. \`?limit=\` (1–200, default 50),
\`?task_status=\` filters, and when more records exist the response carries
\`Link: <…?cursor=…>; rel="next"\`; follow it unchanged.

## Response headers
Every response carries \`X-Request-Id\`: the request's own \`X-Request-Id\` when it is 1–255 of
\`[A-Za-z0-9_=-]\`, else a new UUID; the server's log lines for the request carry the same id. Every
response to a sandbox key (\`vl_test_…\`) carries \`VoiceLoc-Mode: sandbox\`, errors included (not a
**401**, where the key is not known). Sandbox keys act in a space of their own: a live record is a
**404** to them and the reverse, and their lists show only their own records.

## Idempotency
Every creating POST accepts \`Idempotency-Key\` (1–255 characters). The same key and body within
24 hours replays the first response with \`Idempotent-Replayed: true\`; the same key with another
body → **409**. Only successful responses are kept; expired keys are deleted.

## Rate limits
Every \`/v1\` operation except signed downloads counts against the calling credential (each API key;
access tokens by \`sub\`): a token bucket of \`RATE_LIMIT_BURST\` requests (default 100) refilled at
\`RATE_LIMIT_PER_MINUTE\` (default 600 per minute), shared by every gateway of the deployment. Over it →
**429** \`{"detail": "…"}\` with \`Retry-After\` (seconds), and the request does nothing. Responses carry
the IETF fields \`RateLimit-Policy: "per-key";q=<burst>;w=<seconds to refill>\` (at most \`q\` requests
in any \`w\` seconds are always served) and \`RateLimit: "per-key";r=<available>;t=<seconds until full>\`.

## Errors
- **422**: validation errors in the FastAPI / Pydantic v2 shape: \`{"detail": [{"type", "loc", "msg", "input", "ctx"?}]}\`,
  \`loc\` starting with \`body\`, \`query\`, \`path\` or \`header\`. Unknown body fields are ignored.
  The echoed \`input\` is bounded: 3 levels deep, strings cut at 200 characters (ending \`…\`),
  20 items per array or object, 100 values in all; a cut container reads \`"…"\`.
- **307** a route's path with a trailing slash more or less (\`/v1/audio_books\`, \`/v1/voices/streams/\`),
  to the route's path with the same query, as FastAPI does; a 307 keeps the method and body.
- **401** missing or wrong credentials; **404** unknown id or another account's; **405** a known path
  with another method (with \`Allow\`); **409** idempotency conflict; **413** a body over 1 MiB
  (configurable, \`MAX_BODY_BYTES\`); **415** a body that is not \`application/json\` (an upload that is not text, audio or video); **503** a
  capability that is not running (e.g. speech synthesis without a synthesis service), or a gateway that is shutting
  down (a new event stream); **502** a worker that refused or failed what the gateway asked of it (its capability
  table, when a task is created or \`GET /v1/capabilities\` reads it; the voice catalogue; speech synthesis).
  Every non-422 error body is \`{"detail": "<plain words>"}\`.

## Limits
\`file\` references up to 2,048 characters; names up to 500; synthesis text 1–5,000 characters.
JSON bodies nest at most 64 levels (arrays and objects); deeper is a **422** \`json_invalid\` whose
\`ctx.error\` is "Nesting deeper than 64 levels".
File references are \`http(s)://\` URLs, \`s3://\` / \`gs://\` URIs, or paths relative to the
server's media root (no \`..\`, no escape). Refused with a **422** when the record is created: IP
literals that are not public, in any spelling (loopback, private, link-local, metadata such as
169.254.169.254, unique-local, IPv4-mapped IPv6, decimal or octal IPv4), \`localhost\`,
cloud-metadata host names, and \`s3://\` / \`gs://\` while no such store is configured, unless the
operator allow-listed the host. Host names that resolve to private addresses fail the task when
it fetches them. \`upload:<id>\` names one of the caller's uploads (below). With the server's
\`MEDIA_ROOT_SCOPE=account\`, paths resolve under the caller's own folder of the media root. A path
that is missing, not a regular file, outside the (caller's) media root or unreadable gives one
reason, "file not available", as the **422** at creation (what the text alone tells) and as the
\`task_error\`, so nobody learns whether another account's file exists.

## Uploads
\`POST /v1/uploads\` stores a file for the caller's own tasks: the raw body (any \`Content-Type\`,
optional \`?filename=\`) or \`multipart/form-data\` with exactly one file part named \`file\`. It is
streamed, never held whole, up to \`UPLOAD_MAX_BYTES\` (1 GiB by default; **413** above it and
nothing is kept); the JSON body limit does not apply to it. The type is sniffed from the bytes:
UTF-8 text without NUL (\`text/plain\`), audio or video; anything else is a **415**; an empty body a
**422**. **201** with \`Location\` and \`{id, file: "upload:<id>", filename, bytes, content_type,
expires_at, date_created}\`. Pass \`file\` in a \`file\` or \`voice_clone_sample\` field: audio books take
text (\`voice_clone_sample\` audio), voice streams audio or video, subtitle jobs video; another kind,
or an id that is unknown, another account's or expired, is a **422** (one message for the last
three). Uploads expire after \`UPLOAD_TTL_SECONDS\` (24 h by default) and are then deleted.

## Speech synthesis
\`POST /v1/speech/synthesize\` answers **200** with \`{audio_url, duration_seconds}\`. \`language\` is a
Language name or its ISO 639-1 code; \`format\` is \`mp3\` (default), \`wav\`, \`ogg\` (Opus) or \`flac\`;
\`voice\` is optional (each language has a default).

## Capabilities and voices
\`GET /v1/capabilities\` lists, per operation, the languages the configured engines cover (synthesis,
recognition, translation pairs with their pivot, cloning); \`GET /v1/voices?language=\` lists the preset
voices, each language's default marked, then the caller's cloned voices. Creating a task the engines cannot do is a **422** naming the
missing capability and the languages, an unknown \`preset_voice_name\`/\`voice\`, or \`use_voice_clone\`
without a cloning engine. Each creation is checked against the engines of the workers of its own
kind; \`GET /v1/capabilities\` is the union over the kinds running: an entry is listed when at least one
running operation that needs it can do it. While no worker of a kind runs, its tasks are accepted and queued.

## Voice cloning
\`POST /v1/voices/clones\` \`{name, sample, language?}\` makes a voice from a sample of a person's speech
(a file reference, fetched and checked while the request waits: audio, 3 s to 5 min of decoded sound,
not silent; otherwise a **422** at \`sample\` in plain words) and answers **201** with
\`{id, name, voice: "clone:<id>", engine, sample_seconds, languages, date_created}\`. Name it as
\`voice\` (synthesis, voice streams) or \`preset_voice_name\` (audio books); another account's clone is
the same **422** as an unknown voice, and a sandbox key has clones of its own. \`GET /v1/voices/clones\`
lists them (paged), \`DELETE /v1/voices/clones/{clone_id}\` deletes the voice at its engine first
(**204**; the clone is kept with a **503** while the engine cannot be reached). An audio book with
\`use_voice_clone: true\` needs \`voice_clone_sample\` (**422** otherwise) and is spoken in a voice cloned
for it, deleted when it ends; a voice stream with \`use_voice_clone: true\` and no sample clones the
input's own speech. The engine is the server's \`CLONE_ENGINE\`: \`elevenlabs\` (ElevenLabs instant voice
cloning: \`ELEVENLABS_API_KEY\`, \`ELEVENLABS_BASE_URL\`, \`ELEVENLABS_MODEL\`), \`voice-library\` (a
self-hosted OpenAI-compatible speech server that keeps named voices, \`OPENAI_TTS_BASE_URL\`), \`match\`
(the default without an ElevenLabs key: offline, and **not a clone**: an installed voice chosen by pitch
range, shifted to the sample's median pitch within 10 % and its rate within 15 %), or \`off\`.
**Clone a voice only with its speaker's permission**: the account holder answers for every sample.

## Downloads
Result links are \`/v1/files/<key>?expires=…&signature=…\` (HMAC-SHA256, 1 hour); they need no other
credential, support \`Range\`, and answer **403** when tampered with or expired; a path that is
not a valid key (including a malformed percent-encoding) is a **404**.
An audio book's \`stream_url\` is such a link to its HLS playlist (\`/v1/files/streams/audiobook/<id>/index.m3u8\`);
the playlist's parts carry the playlist's own signature, which opens that book's stream only.

## Subtitles
\`POST /v1/videos/subtitle\` answers **202** with a subtitle job; options \`mode\` (\`burn_in\` default |
\`side_file\`) and \`subtitle_format\` (\`srt\` default | \`vtt\`). \`GET /v1/videos/subtitle\` and
\`GET /v1/videos/subtitle/{subtitle_id}\` read the jobs. A video is judged by what decoding finds, never by its
headers: its length by its decoded sound (\`SUBTITLE_MAX_SECONDS\`), its picture by the decoded first frame, before
any filter runs (\`MAX_VIDEO_PIXELS\`, default 8192×4320; \`SANDBOX_MAX_VIDEO_PIXELS\`, default 1920×1080, for a
sandbox key). A job over a limit, or whose file needs more memory than one program may have
(\`CHILD_MEMORY_LIMIT_MB\`), fails at once with \`task_error\` in plain words and is not retried.

## Webhooks
\`POST /v1/webhooks\` registers an endpoint of the account for the events \`audio_book.completed\`,
\`audio_book.failed\`, \`voice_stream.completed\`, \`voice_stream.failed\`, \`subtitle.completed\`,
\`subtitle.failed\`; its signing secret (\`whsec_…\`) is in that response only. When a record finishes,
each enabled endpoint that wants the event gets a POST \`{"type", "timestamp", "data": <the record as GET
returns it>}\` (see \`webhooks\` in this document), signed per Standard Webhooks (\`webhook-id\`, stable
across retries, \`webhook-timestamp\`, \`webhook-signature\`). Any 2xx within the timeout (10 s by
default) is delivered; anything else is retried with exponential back-off and jitter over about a day
(12 attempts by default), each attempt logged in \`GET /v1/webhooks/{webhook_id}/deliveries\`; after the
last one the endpoint is disabled with \`disabled_reason\`. URLs must be \`https://\` and public (checked
at registration and at every delivery), except hosts the operator allow-listed.

## This document
Served at \`/openapi.json\` (OpenAPI 3.1) and rendered at \`/docs\` by a Swagger UI the server
itself hosts: the page loads nothing from elsewhere and works without internet access. Every
operation has a unique snake_case \`operationId\`, and the document passes Redocly's and
Spectral's OpenAPI rule sets. \`info.contact\` and \`info.license\` are this deployment's.
`.trim();
