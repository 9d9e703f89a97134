/** Writes src/generated/api.ts from the gateway's OpenAPI document (`pnpm --filter @voiceloc/sdk generate`). */
import { mkdir, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { generateApiTypes } from "./openapi.ts";

export const GENERATED_PATH = join(dirname(fileURLToPath(import.meta.url)), "..", "src", "generated", "api.ts");

await mkdir(dirname(GENERATED_PATH), { recursive: true });
await writeFile(GENERATED_PATH, await generateApiTypes());
process.stdout.write(`wrote ${GENERATED_PATH}\n`);
