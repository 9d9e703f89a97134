/**
 * "New audio book from a text file": the file is stored as an upload of the chosen space's owner (the
 * same sniffing, size limit and expiry as `POST /v1/uploads`), then an audio book is created from
 * `upload:<id>` exactly as `POST /v1/audio_books/` would (file and capability checks, the sandbox's
 * tasks-in-flight limit, live keys' approval), and the browser is sent to its record page.
 */
import { html } from "hono/html";
import { bodyLimit } from "hono/body-limit";
import { uploadBlobKey } from "@voiceloc/blobs";
import { LANGUAGES, type Language } from "@voiceloc/contracts";
import type { GatewayApp } from "../http/context.ts";
import type { GatewayDeps } from "../deps.ts";
import { HttpProblem, TooManyRequestsError, ValueError422 } from "../http/errors.ts";
import { uuidv7 } from "../records/ids.ts";
import { newTaskFields, type AudioBookDoc } from "../records/kinds.ts";
import { storeTask } from "../records/sandbox-tasks.ts";
import { checkCapabilities, checkFileReference } from "../records/shared.ts";
import { cleanFilename, storeUpload } from "../uploads/intake.ts";
import type { UploadDoc } from "../uploads/repository.ts";
import type { DashboardDeps, DashboardKit } from "./kit.ts";
import { notice, type Markup } from "./views.ts";
import { ownerFor, spaceOf, type Space } from "./work.ts";

/** The form's body: the text file and a few fields; bigger is a 413 (a longer book goes through the API's uploads). */
export const NEW_BOOK_MAX_BYTES = 16 * 1024 * 1024;

interface Values {
  name: string;
  source: string;
  target: string;
  voice: string;
  space: Space;
}

function bookForm(csrf: string, v: Values, problem: string | null): Markup {
  const languageSelect = (id: string, label: string, value: string) =>
    html`<div><label for="${id}">${label}</label><select id="${id}" name="${id}">${LANGUAGES.map(
      (l) => html`<option value="${l}" ${l === value ? "selected" : ""}>${l}</option>`,
    )}</select></div>`;
  return html`${problem ? notice("error", problem) : ""}
<form class="stack" method="post" action="/dashboard/audio-books/new" enctype="multipart/form-data">
<input type="hidden" name="csrf" value="${csrf}">
<div><label for="file">Text file</label><input id="file" name="file" type="file" accept="text/plain,.txt,.md" required aria-describedby="file-hint">
<p class="hint" id="file-hint">Plain UTF-8 text, up to ${NEW_BOOK_MAX_BYTES / 1024 / 1024} MiB.</p></div>
<div><label for="name">Title</label><input id="name" name="name" type="text" maxlength="200" required value="${v.name}"></div>
${languageSelect("source", "Language of the text", v.source)}
${languageSelect("target", "Language to read it in", v.target)}
<div><label for="voice">Voice (optional)</label><input id="voice" name="voice" type="text" maxlength="100" value="${v.voice}" aria-describedby="voice-hint">
<p class="hint" id="voice-hint">A voice name from the "Try it" page; empty: the language's default voice.</p></div>
<fieldset><legend>Space</legend>
<input type="radio" id="space-sandbox" name="space" value="sandbox" ${v.space === "sandbox" ? "checked" : ""}><label for="space-sandbox">Sandbox</label>
<input type="radio" id="space-live" name="space" value="live" ${v.space === "live" ? "checked" : ""}><label for="space-live">Live</label>
</fieldset>
<div><button type="submit">Create the audio book</button></div>
</form>`;
}

export function registerNewBook(app: GatewayApp, deps: GatewayDeps, d: DashboardDeps, kit: DashboardKit): void {
  app.get("/dashboard/audio-books/new", async (c) => {
    const session = await kit.signedIn(c);
    if (session instanceof Response) return session;
    const values: Values = { name: "", source: "English", target: "English", voice: "", space: spaceOf(c.req.query("space")) };
    return kit.render(c, 200, "New audio book", session, bookForm(session.csrf, values, null));
  });

  app.post(
    "/dashboard/audio-books/new",
    bodyLimit({ maxSize: NEW_BOOK_MAX_BYTES + 64 * 1024, onError: (c) => c.text(`The file is too large for this form (at most ${NEW_BOOK_MAX_BYTES / 1024 / 1024} MiB).`, 413) }),
    async (c) => {
      const posted = await kit.postedForm(c);
      if (posted instanceof Response) return posted;
      const { session, form, files } = posted;
      if (!session.account_id) return c.redirect("/dashboard/login", 303);
      const values: Values = {
        name: (form.name ?? "").trim().slice(0, 200),
        source: form.source ?? "English",
        target: form.target ?? "English",
        voice: (form.voice ?? "").trim().slice(0, 100),
        space: spaceOf(form.space),
      };
      const again = (status: 403 | 422 | 429 | 503, problem: string) => kit.render(c, status, "New audio book", session, bookForm(session.csrf, values, problem));
      const file = files.file;
      const isLanguage = (l: string): l is Language => (LANGUAGES as readonly string[]).includes(l);
      if (!file || file.size === 0) return again(422, "Choose a text file that is not empty.");
      if (values.name === "") return again(422, "Give the audio book a title.");
      if (!isLanguage(values.source) || !isLanguage(values.target)) return again(422, "Choose the languages from the lists.");
      if (!deps.uploads) return again(503, "Uploads are not available on this server.");
      const owner = ownerFor(session.account_id, values.space);
      if (values.space === "live" && d.liveKeys === "approval" && !(await d.accounts.liveApproved(session.account_id))) {
        return again(403, "Your live space opens once an operator approves the account; use the sandbox meanwhile.");
      }

      // the upload, as POST /v1/uploads stores one
      const uploads = deps.uploads;
      const now = deps.now ? deps.now() : new Date();
      const uploadId = uuidv7();
      const key = uploadBlobKey(owner, uploadId);
      let upload: UploadDoc;
      try {
        const bytes = new Uint8Array(await file.arrayBuffer());
        const stored = await storeUpload(
          (async function* () {
            yield bytes;
          })(),
          { blobs: uploads.blobs, key, maxBytes: uploads.maxBytes, emptyLoc: ["body", "file"] },
        );
        upload = {
          id: uploadId,
          owner,
          blob_key: key,
          bytes: stored.bytes,
          content_type: stored.contentType,
          kind: stored.kind,
          filename: cleanFilename(file.name),
          expires_at: new Date(now.getTime() + uploads.ttlSeconds * 1000).toISOString(),
          date_created: now.toISOString(),
        };
        await uploads.repo.create(upload);
      } catch (error) {
        await uploads.blobs.delete(key).catch(() => undefined);
        if (error instanceof HttpProblem && error.status !== 500) return again(422, `The file was refused: ${error.message}`);
        throw error;
      }

      // the audio book, as POST /v1/audio_books/ makes one
      const ref = `upload:${upload.id}`;
      try {
        await checkFileReference(deps, owner, ref, ["body", "file"], ["text"]);
        await checkCapabilities(deps, {
          kind: "audiobook",
          source: values.source,
          target: values.target,
          voice: values.voice === "" ? undefined : values.voice,
          voiceField: "preset_voice_name",
          useVoiceClone: false,
        });
      } catch (error) {
        if (error instanceof ValueError422) {
          return again(422, error.items.map((item) => String(item.msg ?? "").replace(/^Value error, /, "")).join(" "));
        }
        throw error;
      }
      const id = uuidv7();
      const doc: AudioBookDoc = {
        id,
        ...newTaskFields(owner, now),
        file: ref,
        name: values.name,
        source_language: values.source,
        target_language: values.target,
        audio_book_cover: null,
        use_voice_clone: false,
        preset_voice_name: values.voice === "" ? null : values.voice,
        voice_clone_sample: null,
      };
      try {
        await storeTask(deps.sandboxTasks, "audiobook", deps.records.audiobook, doc);
      } catch (error) {
        if (error instanceof TooManyRequestsError) return again(429, `The sandbox may have at most ${deps.sandboxTasks?.limit} unfinished tasks at once: wait for one to finish.`);
        throw error;
      }
      try {
        await deps.dispatcher.dispatch("audiobook", doc);
      } catch (error) {
        deps.logger.warn({ err: error, task: id }, "work not published yet; the re-publish sweep will retry");
      }
      return c.redirect(`/dashboard/audio-books/${id}?space=${values.space}`, 303);
    },
  );
}
