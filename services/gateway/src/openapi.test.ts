import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Validator } from "@seriousme/openapi-schema-validator";
import { startTestGateway, type TestGateway } from "./testing/harness.ts";

let t: TestGateway;
beforeAll(async () => {
  t = await startTestGateway();
});
afterAll(async () => {
  await t.close();
});

describe("/openapi.json", () => {
  it("is a valid OpenAPI 3.1 document", async () => {
    const res = await t.request("GET", "/openapi.json", { key: null });
    expect(res.status).toBe(200);
    const doc: any = await res.json();
    const validator = new Validator();
    const result = await validator.validate(doc);
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
    expect(doc.openapi).toBe("3.1.0");
    expect(doc.info.version).toBe("0.1.0");
  });

  it("describes every operation of the contract and the extensions", async () => {
    const doc: any = await (await t.request("GET", "/openapi.json", { key: null })).json();
    const ops = Object.entries(doc.paths as Record<string, Record<string, unknown>>).flatMap(([path, item]) =>
      Object.keys(item).map((method) => `${method.toUpperCase()} ${path}`),
    );
    expect(ops.sort()).toEqual(
      [
        "GET /v1/audio_books/",
        "POST /v1/audio_books/",
        "GET /v1/audio_books/{audio_book_id}",
        "PATCH /v1/audio_books/{audio_book_id}",
        "GET /v1/voices/streams",
        "POST /v1/voices/streams",
        "GET /v1/voices/streams/{voice_id}",
        "POST /v1/videos/subtitle",
        "GET /v1/videos/subtitle",
        "GET /v1/videos/subtitle/{subtitle_id}",
        "POST /v1/speech/synthesize",
        "GET /v1/voices",
        "GET /v1/capabilities",
        "GET /v1/audio_books/{audio_book_id}/events",
        "GET /v1/voices/streams/{voice_id}/events",
        "GET /v1/videos/subtitle/{subtitle_id}/events",
        "POST /v1/webhooks",
        "GET /v1/webhooks",
        "GET /v1/webhooks/{webhook_id}",
        "PATCH /v1/webhooks/{webhook_id}",
        "DELETE /v1/webhooks/{webhook_id}",
        "GET /v1/webhooks/{webhook_id}/deliveries",
        "POST /v1/uploads",
        "GET /v1/uploads",
        "GET /v1/uploads/{upload_id}",
        "DELETE /v1/uploads/{upload_id}",
        "POST /v1/voices/clones",
        "GET /v1/voices/clones",
        "GET /v1/voices/clones/{clone_id}",
        "DELETE /v1/voices/clones/{clone_id}",
        "POST /v1/lexicons",
        "GET /v1/lexicons",
        "GET /v1/lexicons/{lexicon_id}",
        "DELETE /v1/lexicons/{lexicon_id}",
      ].sort(),
    );
    expect(doc.components.schemas.Language.enum).toHaveLength(16);
    expect(doc.components.schemas.TaskStatus.enum).toEqual(["queued", "processing", "completed", "failed"]);
    expect(doc.paths["/v1/audio_books/"].post.responses["201"]).toBeDefined();
    expect(doc.paths["/v1/audio_books/"].post.responses["422"]).toBeDefined();
    expect(doc.paths["/v1/videos/subtitle"].post.responses["202"]).toBeDefined();
    expect(doc.components.securitySchemes.APIKeyHeader).toMatchObject({ type: "apiKey", in: "header", name: "API-KEY" });
    // the upload takes its body raw or as multipart (streamed, never the JSON body parser)
    expect(Object.keys(doc.paths["/v1/uploads"].post.requestBody.content).sort()).toEqual(
      ["application/octet-stream", "audio/*", "multipart/form-data", "text/plain", "video/*"],
    );
    for (const status of ["201", "401", "413", "415", "422"]) expect(doc.paths["/v1/uploads"].post.responses[status], status).toBeDefined();
    const create = doc.components.schemas.CreateAudioBook;
    expect(create.required.sort()).toEqual(["file", "name", "source_language", "target_language"]);
  });

  it("documents the live progress streams: text/event-stream frames with the JSON of each event's data", async () => {
    const doc: any = await (await t.request("GET", "/openapi.json", { key: null })).json();
    for (const [path, record] of [
      ["/v1/audio_books/{audio_book_id}/events", "AudioBook"],
      ["/v1/voices/streams/{voice_id}/events", "VoiceStream"],
      ["/v1/videos/subtitle/{subtitle_id}/events", "SubtitleJob"],
    ] as const) {
      const op = doc.paths[path].get;
      expect(op.tags).toEqual(["Events"]);
      expect(Object.keys(op.responses).sort()).toEqual(["200", "204", "401", "403", "404", "422", "429", "503"]);
      const frames = op.responses["200"].content["text/event-stream"].schema;
      const byEvent = Object.fromEntries(frames.anyOf.map((f: any) => [f.properties.event.const ?? f.properties.event.enum?.[0], f.properties.data]));
      expect(byEvent.progress).toMatchObject({ contentMediaType: "application/json", contentSchema: { $ref: "#/components/schemas/RecordProgress" } });
      expect(byEvent.completed.contentSchema).toEqual({ $ref: `#/components/schemas/${record}` });
      expect(byEvent.failed.contentSchema).toEqual({ $ref: `#/components/schemas/${record}` });
      expect(doc.components.schemas[record]).toBeDefined();
      expect(op.parameters.map((p: any) => [p.in, p.name, typeof p.description])).toEqual(
        expect.arrayContaining([["header", "last-event-id", "string"], ["path", path.match(/\{(\w+)\}/)![1], "string"]]),
      );
    }
    expect(Object.keys(doc.components.schemas.RecordProgress.properties).sort()).toEqual(["date_updated", "id", "task_progress", "task_status"]);
  });

  it("documents each webhook event's payload in the OpenAPI 3.1 webhooks section", async () => {
    const doc: any = await (await t.request("GET", "/openapi.json", { key: null })).json();
    expect(Object.keys(doc.webhooks).sort()).toEqual(
      ["audio_book.completed", "audio_book.failed", "voice_stream.completed", "voice_stream.failed", "subtitle.completed", "subtitle.failed"].sort(),
    );
    const book = doc.webhooks["audio_book.completed"].post;
    expect(book.parameters.map((p: { name: string }) => p.name).sort()).toEqual(["webhook-id", "webhook-signature", "webhook-timestamp"]);
    const payload = book.requestBody.content["application/json"].schema;
    const resolved = payload.$ref ? doc.components.schemas[payload.$ref.split("/").pop()] : payload;
    expect(resolved.required.sort()).toEqual(["data", "timestamp", "type"]);
    expect(resolved.properties.type).toMatchObject({ type: "string", enum: ["audio_book.completed"] });
    expect(doc.tags.map((tag: { name: string }) => tag.name)).toContain("Webhooks");
  });

  it("states the response headers every answer may carry: X-Request-Id, VoiceLoc-Mode for sandbox keys, the RateLimit fields", async () => {
    const doc: any = await (await t.request("GET", "/openapi.json", { key: null })).json();
    for (const field of ["X-Request-Id", "VoiceLoc-Mode: sandbox", "RateLimit-Policy", "Retry-After"]) expect(doc.info.description).toContain(field);
  });

  it("writes a nullable reference so that null matches it: anyOf [$ref, {type: null}], never an allOf with the referenced schema", async () => {
    const doc: any = await (await t.request("GET", "/openapi.json", { key: null })).json();
    const nullInAllOf: string[] = [];
    const walk = (node: unknown, pointer: string): void => {
      if (Array.isArray(node)) return node.forEach((item, i) => walk(item, `${pointer}/${i}`));
      if (typeof node !== "object" || node === null) return;
      const schema = node as Record<string, unknown>;
      if (Array.isArray(schema.allOf) && schema.allOf.some((s: any) => s?.$ref) && schema.allOf.some((s: any) => s?.type === "null" || (Array.isArray(s?.type) && s.type.includes("null")))) {
        nullInAllOf.push(pointer);
      }
      for (const [key, value] of Object.entries(schema)) walk(value, `${pointer}/${key}`);
    };
    walk(doc, "#");
    expect(nullInAllOf).toEqual([]);
    const pair = doc.components.schemas.Capabilities.properties.translation.properties.pairs.items;
    expect(pair.required).toContain("pivot");
    expect(pair.properties.pivot).toMatchObject({ anyOf: [{ $ref: "#/components/schemas/Language" }, { type: "null" }], description: expect.stringContaining("null for a direct pair") });
  });

  it("states the contract's defaults: use_voice_clone defaults to false", async () => {
    const doc: any = await (await t.request("GET", "/openapi.json", { key: null })).json();
    expect(doc.components.schemas.CreateAudioBook.properties.use_voice_clone).toMatchObject({ type: "boolean", default: false });
  });
});
