/**
 * The dashboard's view of the account's work: audio books, voice streams and subtitle jobs (lists with
 * status filter, pagination and live progress bars, and a page per record with its player, subtitle
 * text or failure reason), the "try it" speech form and the audio-book-from-a-text-file form.
 *
 * Live progress comes from `/dashboard/events/<kind>/<id>`: the same stream as the public `…/events`
 * operations (`recordEventStream`), authorised by the session instead of a key. The dashboard shows one
 * space at a time: `?space=live` (the account's own records) or `?space=sandbox` (`sandbox:<account>`).
 */
import { html } from "hono/html";
import { LANGUAGES, LANGUAGE_CODES, TASK_STATUSES, sandboxOwner, type Language, type TaskKind, type TaskStatus } from "@voiceloc/contracts";
import type { GatewayApp } from "../http/context.ts";
import type { GatewayDeps } from "../deps.ts";
import { HttpProblem, ValueError422 } from "../http/errors.ts";
import { recordEventStream } from "../records/sse.ts";
import { InvalidCursorError, type TaskDoc } from "../records/repository.ts";
import { audioBookStreamUrl } from "../records/stream.ts";
import { KIND_LIST, type AudioBookDoc, type SubtitleDoc, type VoiceStreamDoc } from "../records/kinds.ts";
import { notice, type Markup } from "./views.ts";
import type { DashboardKit } from "./kit.ts";

export type Space = "live" | "sandbox";

const PAGE_SIZE = 20;
/** The most of a subtitle file a record page shows. */
const SUBTITLE_TEXT_MAX_BYTES = 256 * 1024;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function spaceOf(raw: string | undefined): Space {
  return raw === "sandbox" ? "sandbox" : "live";
}

export function ownerFor(account: string, space: Space): string {
  return space === "sandbox" ? sandboxOwner(account) : account;
}

/** A signed download URL as a path on this origin (the page's CSP allows media from 'self' only). */
function local(url: string): string {
  const u = new URL(url);
  return `${u.pathname}${u.search}`;
}

const statusLabel = (status: string) => html`<span class="status status-${status}" data-status>${status}</span>`;

function progressBar(kind: TaskKind, doc: TaskDoc, space: Space, label: string): Markup {
  const finished = doc.task_status === "completed" || doc.task_status === "failed";
  return html`<progress max="100" value="${doc.task_progress}" aria-label="${label}" ${finished ? "" : html`data-events="/dashboard/events/${kind}/${doc.id}?space=${space}"`}>${doc.task_progress}%</progress>
<span class="pct" data-progress-text>${doc.task_progress}%</span>`;
}

function describe(doc: TaskDoc): { name: string; languages: string } {
  const d = doc as TaskDoc & { name?: string; file?: string; source_language?: string; target_language?: string };
  return { name: d.name ?? d.file ?? doc.id, languages: `${d.source_language ?? "?"} → ${d.target_language ?? "?"}` };
}

function spaceSwitch(path: string, space: Space, extra = ""): Markup {
  const link = (s: Space, text: string) =>
    s === space ? html`<strong aria-current="page">${text}</strong>` : html`<a href="${path}?space=${s}${extra}">${text}</a>`;
  return html`<p class="spaces">Records of ${link("live", "live keys")} · ${link("sandbox", "sandbox keys")}</p>`;
}

export function registerWorkPages(app: GatewayApp, deps: GatewayDeps, kit: DashboardKit): void {
  for (const spec of KIND_LIST) {
    const page = { kind: spec.kind, ...spec.dashboard };
    const docs = deps.reads[spec.kind].docs;
    app.get(`/dashboard/${page.slug}`, async (c) => {
      const session = await kit.signedIn(c);
      if (session instanceof Response) return session;
      const account = session.account_id ?? "";
      const space = spaceOf(c.req.query("space"));
      const rawStatus = c.req.query("status") ?? "";
      const status = (TASK_STATUSES as readonly string[]).includes(rawStatus) ? (rawStatus as TaskStatus) : undefined;
      const cursor = c.req.query("cursor") || undefined;
      let listed: { items: TaskDoc[]; nextCursor: string | null };
      try {
        listed = await docs.list(ownerFor(account, space), { limit: PAGE_SIZE, cursor, taskStatus: status });
      } catch (error) {
        if (!(error instanceof InvalidCursorError)) throw error;
        return kit.render(c, 422, page.title, session, notice("error", "That page link is not valid any more: start from the first page."));
      }
      const next = listed.nextCursor
        ? `/dashboard/${page.slug}?space=${space}${status ? `&status=${status}` : ""}&cursor=${encodeURIComponent(listed.nextCursor)}`
        : null;
      const body = html`${spaceSwitch(`/dashboard/${page.slug}`, space)}
${page.kind === "audiobook" ? html`<p><a class="button" href="/dashboard/audio-books/new?space=${space}">New audio book from a text file</a></p>` : ""}
<form class="filters" method="get" action="/dashboard/${page.slug}">
<input type="hidden" name="space" value="${space}">
<label for="status">Status</label>
<select id="status" name="status"><option value="">any</option>${TASK_STATUSES.map((s) => html`<option value="${s}" ${s === status ? "selected" : ""}>${s}</option>`)}</select>
<button type="submit" class="secondary">Filter</button>
</form>
${
  listed.items.length === 0
    ? html`<p>Nothing here yet${status ? ` with status ${status}` : ""}.</p>`
    : html`<table class="records">
<thead><tr><th scope="col">Name</th><th scope="col">Languages</th><th scope="col">Status</th><th scope="col">Progress</th><th scope="col">Created</th></tr></thead>
<tbody>${listed.items.map((doc) => {
        const { name, languages } = describe(doc);
        return html`<tr data-record="${doc.id}">
<td data-label="Name"><a href="/dashboard/${page.slug}/${doc.id}?space=${space}">${name}</a></td>
<td data-label="Languages">${languages}</td>
<td data-label="Status">${statusLabel(doc.task_status)}</td>
<td data-label="Progress">${progressBar(page.kind, doc, space, `Progress of ${name}`)}</td>
<td data-label="Created"><time datetime="${doc.date_created}">${doc.date_created.slice(0, 16).replace("T", " ")} UTC</time></td>
</tr>`;
      })}</tbody></table>`
}
${next ? html`<p><a href="${next}" rel="next">Next page</a></p>` : ""}`;
      return kit.render(c, 200, `${page.title}${space === "sandbox" ? " (sandbox)" : ""}`, session, body);
    });

    app.get(`/dashboard/${page.slug}/:id`, async (c) => {
      const session = await kit.signedIn(c);
      if (session instanceof Response) return session;
      const id = c.req.param("id");
      if (id === "new") return c.notFound();
      const space = spaceOf(c.req.query("space"));
      const doc = UUID.test(id) ? await docs.getOwned(ownerFor(session.account_id ?? "", space), id) : null;
      if (!doc) return kit.render(c, 404, page.singular, session, notice("error", `No such ${page.singular.toLowerCase()} among the ${space} records.`));
      const { name, languages } = describe(doc);
      const subtitleKey = page.kind === "subtitle" ? (doc as SubtitleDoc).subtitle_key : null;
      const subtitleText = subtitleKey ? await readText(deps, subtitleKey) : null;
      const result = doc.result_key ? local(deps.signer.sign(doc.result_key)) : null;
      // An audio book being spoken plays its HLS stream (hls.js where the browser has no HLS of its own).
      const streamUrl = page.kind === "audiobook" && doc.task_status === "processing" ? audioBookStreamUrl(doc, deps.signer) : null;
      const stream = streamUrl
        ? html`<h2>Listen while it renders</h2><audio controls preload="none" data-hls="${local(streamUrl)}" class="player" id="stream-player"></audio><script src="/dashboard/assets/hls.js" defer></script>`
        : "";
      const body = html`<p><a href="/dashboard/${page.slug}?space=${space}">← All ${page.title.toLowerCase()}</a></p>
<dl class="facts">
<dt>Name</dt><dd>${name}</dd>
<dt>Languages</dt><dd>${languages}</dd>
<dt>Status</dt><dd>${statusLabel(doc.task_status)}</dd>
<dt>Progress</dt><dd data-reload-on-finish>${progressBar(page.kind, doc, space, `Progress of ${name}`)}</dd>
<dt>Space</dt><dd>${space}</dd>
<dt>Id</dt><dd><code>${doc.id}</code></dd>
</dl>
${doc.task_status === "failed" ? html`<h2>Why it failed</h2>${notice("error", doc.task_error ?? "The task failed.")}` : ""}
${
  result
    ? playsAsVideo(page.player, doc.result_key)
      ? html`<h2>Result</h2><video controls preload="metadata" src="${result}" class="player"></video><p><a href="${result}">Download the video</a></p>`
      : html`<h2>Result</h2><audio controls preload="metadata" src="${result}" class="player"></audio><p><a href="${result}">Download the audio</a></p>`
    : ""
}
${stream}
${subtitleText !== null ? html`<h2>Subtitles</h2><pre class="subtitles" tabindex="0">${subtitleText}</pre>` : ""}`;
      return kit.render(c, 200, `${page.singular}: ${name}`, session, body);
    });
  }

  // Live progress for the session's own records (never a /v1 credential).
  app.get("/dashboard/events/:kind/:id", async (c) => {
    const session = await kit.current(c);
    if (!session?.account_id) return c.text("Sign in first.", 401);
    const kind = c.req.param("kind") as TaskKind;
    const id = c.req.param("id");
    if (!KIND_LIST.some((spec) => spec.kind === kind) || !UUID.test(id)) return c.text("Not Found", 404);
    return recordEventStream(c, deps, { kind, ownerId: ownerFor(session.account_id, spaceOf(c.req.query("space"))), id });
  });

  // "Try it": a sentence in any language with a chosen voice, in the sandbox space and its limits.
  app.get("/dashboard/try", async (c) => {
    const session = await kit.signedIn(c);
    if (session instanceof Response) return session;
    return kit.render(c, 200, "Try a voice", session, await tryForm(deps, session.csrf, { text: "", language: "English", voice: "" }, null, null));
  });

  app.post("/dashboard/try", async (c) => {
    const posted = await kit.postedForm(c);
    if (posted instanceof Response) return posted;
    const { session, form } = posted;
    if (!session.account_id) return c.redirect("/dashboard/login", 303);
    const text = (form.text ?? "").trim();
    const language = (LANGUAGES as readonly string[]).includes(form.language ?? "") ? (form.language as Language) : null;
    const voice = (form.voice ?? "").trim();
    const values = { text, language: language ?? "English", voice };
    const max = deps.sandbox?.maxSpeechCharacters ?? 500;
    const again = async (status: 422 | 503, problem: string) =>
      kit.render(c, status, "Try a voice", session, await tryForm(deps, session.csrf, values, problem, null));
    if (!language) return again(422, "Choose one of the languages.");
    if (text.length === 0) return again(422, "Write a sentence to hear.");
    if ([...text].length > max) return again(422, `At most ${max} characters here (SANDBOX_MAX_SPEECH_CHARACTERS).`);
    if (!deps.synthesizer) return again(503, "Speech synthesis is not available: this deployment runs no synthesis service.");
    try {
      const result = await deps.synthesizer.synthesize({
        text,
        language,
        languageInput: language,
        voice: voice === "" ? null : voice,
        format: "mp3",
        accountId: sandboxOwner(session.account_id),
        requestId: c.get("requestId"),
      });
      const audio = { url: local(deps.signer.sign(result.key)), seconds: result.durationSeconds };
      return kit.render(c, 200, "Try a voice", session, await tryForm(deps, session.csrf, values, null, audio));
    } catch (error) {
      if (error instanceof ValueError422) return again(422, plainItems(error));
      if (error instanceof HttpProblem) return again(error.status === 422 ? 422 : 503, error.message);
      throw error;
    }
  });
}

/** Result files that are videos: a subtitle job's, and a voice stream's made from a video (the same kind of container as its input). */
const VIDEO_RESULT = /\.(?:mp4|mkv|webm|mov|m4v)$/i;

/** Whether a record's result is shown in a video player: its kind's player, or a video file (a dubbed video). */
function playsAsVideo(player: "audio" | "video", resultKey: string | null | undefined): boolean {
  return player === "video" || (resultKey !== null && resultKey !== undefined && VIDEO_RESULT.test(resultKey));
}

function plainItems(error: ValueError422): string {
  return error.items.map((item) => String(item.msg ?? error.message).replace(/^Value error, /, "")).join(" ");
}

async function tryForm(
  deps: GatewayDeps,
  csrf: string,
  values: { text: string; language: string; voice: string },
  problem: string | null,
  audio: { url: string; seconds: number } | null,
): Promise<Markup> {
  let voices: Array<{ name: string; language: string; description: string }> = [];
  try {
    voices = (await deps.voiceCatalog?.voices()) ?? [];
  } catch {
    voices = [];
  }
  const max = deps.sandbox?.maxSpeechCharacters ?? 500;
  return html`${problem ? notice("error", problem) : ""}
${
  audio
    ? html`<section class="notice ok" aria-labelledby="heard"><h2 id="heard">Your sentence (${audio.seconds.toFixed(1)} s)</h2>
<audio controls autoplay src="${audio.url}" class="player" id="try-audio"></audio></section>`
    : ""
}
<form class="stack" method="post" action="/dashboard/try">
<input type="hidden" name="csrf" value="${csrf}">
<div><label for="text">Sentence</label><textarea id="text" name="text" rows="3" maxlength="${max}" required aria-describedby="text-hint">${values.text}</textarea>
<p class="hint" id="text-hint">Up to ${max} characters; made in the sandbox space.</p></div>
<div><label for="language">Language</label><select id="language" name="language">${LANGUAGES.map(
    (l) => html`<option value="${l}" ${l === values.language ? "selected" : ""}>${l} (${LANGUAGE_CODES[l]})</option>`,
  )}</select></div>
<div><label for="voice">Voice</label><select id="voice" name="voice" aria-describedby="voice-hint"><option value="">The language's default voice</option>${LANGUAGES.filter((l) =>
    voices.some((v) => v.language === l),
  ).map(
    (l) =>
      html`<optgroup label="${l}">${voices
        .filter((v) => v.language === l)
        .map((v) => html`<option value="${v.name}" ${v.name === values.voice ? "selected" : ""}>${v.name} — ${v.description}</option>`)}</optgroup>`,
  )}</select>
<p class="hint" id="voice-hint">A voice speaks its own language only.</p></div>
<div><button type="submit">Speak</button></div>
</form>`;
}

async function readText(deps: GatewayDeps, key: string): Promise<string | null> {
  const blobs = deps.files?.blobs;
  if (!blobs) return null;
  try {
    const stream = await blobs.createReadStream(key);
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of stream) {
      const buf = chunk as Buffer;
      chunks.push(buf);
      size += buf.length;
      if (size >= SUBTITLE_TEXT_MAX_BYTES) {
        stream.destroy();
        break;
      }
    }
    const text = Buffer.concat(chunks).subarray(0, SUBTITLE_TEXT_MAX_BYTES).toString("utf8");
    return size >= SUBTITLE_TEXT_MAX_BYTES ? `${text}\n…` : text;
  } catch {
    return null;
  }
}

export type { AudioBookDoc, VoiceStreamDoc };
