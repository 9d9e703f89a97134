/** The committed generated types are what `pnpm --filter @voiceloc/sdk generate` writes for today's gateway. */
import { readFile } from "node:fs/promises";
import { describe, expect, it } from "vitest";
import { generateApiTypes } from "../scripts/openapi.ts";

describe("src/generated/api.ts", () => {
  it("equals a fresh generation from the gateway's OpenAPI document (run `pnpm --filter @voiceloc/sdk generate` when it does not)", async () => {
    const committed = await readFile(new URL("./generated/api.ts", import.meta.url), "utf8");
    const fresh = await generateApiTypes();
    expect(committed === fresh, "src/generated/api.ts is stale: run `pnpm --filter @voiceloc/sdk generate` and commit it").toBe(true);
    expect(fresh).toContain('"/v1/audio_books/"');
  });
});
