/**
 * The API key CLI as an entry of the shipped service: `node dist/keys.js create <account> [--name <label>]`,
 * `… list [<account>]`, `… revoke <key_id>` (in the repository: `pnpm keys …`). It works on the store
 * the configuration names (DATA_DIR or MONGODB_URL), like the gateway.
 */

// Stack traces name the TypeScript source (see main.ts).
process.setSourceMapsEnabled(true);
const { runKeysCli } = await import("@voiceloc/gateway");

try {
  const code = await runKeysCli(process.argv.slice(2), (line) => process.stdout.write(`${line}\n`));
  process.exit(code);
} catch (error) {
  process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
}
