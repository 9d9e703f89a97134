import { randomUUID } from "node:crypto";
import { afterEach, describe, expect, it } from "vitest";
import { projectEvent, workMessageFor } from "../mesh/tasks.ts";
import { startTestGateway, type TestGateway } from "../testing/harness.ts";
import type { AudioBookDoc } from "./kinds.ts";

let t: TestGateway | undefined;
afterEach(async () => {
  await t?.close();
  t = undefined;
});

async function queuedBook(gw: TestGateway, extra: Partial<AudioBookDoc> = {}): Promise<AudioBookDoc> {
  const now = new Date().toISOString();
  const doc: AudioBookDoc = {
    id: randomUUID(),
    account_id: "alice",
    task_status: "queued",
    task_progress: 0,
    task_error: null,
    result_key: null,
    seq: 0,
    published: true,
    date_created: now,
    date_updated: now,
    file: "book.epub",
    name: "The Harbour",
    source_language: "English",
    target_language: "English",
    audio_book_cover: "https://covers.example.org/harbour.png",
    use_voice_clone: false,
    preset_voice_name: null,
    voice_clone_sample: null,
    ...extra,
  };
  await gw.gateway.deps.records.audiobook.create(doc);
  return doc;
}

describe("audio book chapters, format and warnings on the record", () => {
  it("reads null chapters and no warnings until the book completes, then the chapters and warnings the completed event carried", async () => {
    t = await startTestGateway();
    const doc = await queuedBook(t, { output_format: "m4b" });
    const before = (await (await t.request("GET", `/v1/audio_books/${doc.id}`)).json()) as Record<string, unknown>;
    expect(before).toMatchObject({ output_format: "m4b", chapters: null, warnings: [] });

    const chapters = [
      { title: "Arrival", start_seconds: 0, end_seconds: 12.5 },
      { title: "The Storm", start_seconds: 12.5, end_seconds: 30.25 },
    ];
    const warnings = ["The cover was not embedded: it could not be fetched."];
    await projectEvent(t.gateway.deps.records, {
      task_id: doc.id,
      kind: "audiobook",
      seq: 5,
      status: "completed",
      progress: 100,
      result_key: `results/audiobook/${doc.id}.m4b`,
      chapters,
      warnings,
      at: new Date().toISOString(),
    });
    const res = await t.request("GET", `/v1/audio_books/${doc.id}`);
    const after = (await res.json()) as Record<string, unknown>;
    expect(after).toMatchObject({ task_status: "completed", output_format: "m4b", chapters, warnings });
    expect(String(after.localized_file)).toContain(".m4b");
  });

  it("reads an older record (no format, chapters or warnings) as an MP3 without chapters; the work message carries the format and cover", async () => {
    t = await startTestGateway();
    const old = await queuedBook(t, { audio_book_cover: null });
    expect((await (await t.request("GET", `/v1/audio_books/${old.id}`)).json()) as Record<string, unknown>).toMatchObject({
      output_format: "mp3",
      chapters: null,
      warnings: [],
    });
    expect(workMessageFor("audiobook", old)).toMatchObject({ output_format: "mp3", audio_book_cover: null });
    const m4b = await queuedBook(t, { output_format: "m4b" });
    expect(workMessageFor("audiobook", m4b)).toMatchObject({ output_format: "m4b", audio_book_cover: "https://covers.example.org/harbour.png" });
  });

  it("takes output_format and audio_book_cover on create and refuses other formats in plain words", async () => {
    t = await startTestGateway();
    const res = await t.request("POST", "/v1/audio_books/", {
      body: { file: "book.txt", name: "X", source_language: "English", target_language: "English", output_format: "ogg" },
    });
    expect(res.status).toBe(422);
    expect(JSON.stringify(await res.json())).toContain("output_format");
  });
});
