/** How the generated types read a `default`: optional in what a client sends, required in what the server answers. */
import { readFile } from "node:fs/promises";
import { describe, expect, it } from "vitest";
import { generateTypes } from "./openapi.ts";

const json = (schema: Record<string, unknown>) => ({ content: { "application/json": { schema } } });

/** A small document whose `POST /things` sends `requestSchema` (a component name). */
function document(requestSchema = "CreateThing"): Record<string, unknown> {
  return {
    openapi: "3.1.0",
    info: { title: "t", version: "1" },
    paths: {
      "/things": {
        post: {
          operationId: "create_thing",
          requestBody: { required: true, ...json({ $ref: `#/components/schemas/${requestSchema}` }) },
          responses: {
            201: { description: "made", ...json({ $ref: "#/components/schemas/Thing" }) },
            202: { description: "inline", ...json({ type: "object", properties: { queued: { type: "boolean", default: true } } }) },
          },
        },
      },
    },
    components: {
      schemas: {
        CreateThing: {
          type: "object",
          properties: { name: { type: "string" }, loud: { type: "boolean", default: false } },
          required: ["name"],
        },
        Thing: {
          type: "object",
          properties: { name: { type: "string" }, loud: { type: "boolean", default: false }, owner: { $ref: "#/components/schemas/Owner" } },
          required: ["name", "owner"],
        },
        Owner: { type: "object", properties: { plan: { type: "string", default: "free" } } },
      },
    },
  };
}

/** The property lines of one component's generated type. */
function members(types: string, name: string): string {
  const start = types.indexOf(`        ${name}: {`);
  return types.slice(start, types.indexOf("\n        };", start));
}

describe("generated types and defaults", () => {
  it("keep a request body's defaulted field optional and make a response's required", async () => {
    const types = await generateTypes(document());
    expect(members(types, "CreateThing")).toMatch(/\bloud\?: boolean;/);
    expect(members(types, "CreateThing")).toMatch(/\bname: string;/);
    expect(members(types, "Thing")).toMatch(/\bloud: boolean;/);
    // …also in a component a response reaches through another, and in a response schema written inline.
    expect(members(types, "Owner")).toMatch(/\bplan: string;/);
    expect(types).toMatch(/\bqueued: boolean;/);
    expect(types).toContain("@default false");
  });

  it("refuses a component with a default that is both sent and answered", async () => {
    await expect(generateTypes(document("Thing"))).rejects.toThrow("components.schemas.Thing has a default and is both sent and answered");
  });

  it("the committed types let `POST /v1/audio_books/` leave use_voice_clone out", async () => {
    const committed = await readFile(new URL("../src/generated/api.ts", import.meta.url), "utf8");
    expect(members(committed, "CreateAudioBook")).toMatch(/\buse_voice_clone\?: boolean;/);
  });
});
