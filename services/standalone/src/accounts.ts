/**
 * The dashboard account CLI as an entry of the shipped service: `node dist/accounts.js create <email> --password-stdin`,
 * `… approve <email>`, `… reset-link <email>`, `… revoke-sessions <email>` (in the repository: `pnpm accounts …`). It works on the store
 * the configuration names (DATA_DIR or MONGODB_URL), like the gateway.
 */

// Stack traces name the TypeScript source (see main.ts).
process.setSourceMapsEnabled(true);
const { runAccountsCli } = await import("@voiceloc/gateway");

try {
  const code = await runAccountsCli(process.argv.slice(2), (line) => process.stdout.write(`${line}\n`));
  process.exit(code);
} catch (error) {
  process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
}
