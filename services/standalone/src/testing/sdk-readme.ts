/** The SDK README's client example, as the end-to-end tests run it. */
import { readFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

export const SDK_DIR = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "..", "..", "packages", "sdk");

/** The first TypeScript block of the "## Client" section of packages/sdk/README.md. */
export async function sdkReadmeExample(): Promise<string> {
  const readme = await readFile(join(SDK_DIR, "README.md"), "utf8");
  const section = readme.slice(readme.indexOf("## Client"));
  const example = /```ts\n([\s\S]*?)```/.exec(section)?.[1];
  if (example === undefined) throw new Error("packages/sdk/README.md has no ```ts block under ## Client");
  return example;
}
