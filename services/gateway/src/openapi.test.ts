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
        "POST /v1/uploads",
        "GET /v1/uploads",
        "GET /v1/uploads/{upload_id}",
        "DELETE /v1/uploads/{upload_id}",
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

  it("states the contract's defaults: use_voice_clone defaults to false", async () => {
    const doc: any = await (await t.request("GET", "/openapi.json", { key: null })).json();
    expect(doc.components.schemas.CreateAudioBook.properties.use_voice_clone).toMatchObject({ type: "boolean", default: false });
  });
});
