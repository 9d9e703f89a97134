/**
 * API key administration: `pnpm keys create <account> [--name <label>]`,
 * `pnpm keys list [<account>]`, `pnpm keys revoke <key_id>`.
 * Works on the same store the gateway uses (DATA_DIR or MONGODB_URL).
 */
import { parseArgs } from "node:util";
import { loadConfig } from "@voiceloc/config";
import { createLogger } from "@voiceloc/log";
import { ApiKeyRepository } from "../auth/api-keys.ts";
import { openGatewayStore } from "../gateway.ts";

const USAGE = `usage:
  keys create <account> [--name <label>] [--sandbox]
                                           create a key (live, or sandbox: vl_test_…); prints it once
  keys list [<account>]                    list keys (never the keys themselves)
  keys revoke <key_id>                     revoke a key`;

const ACCOUNT_ID = /^[A-Za-z0-9][A-Za-z0-9._@+-]{0,63}$/;

export async function runKeysCli(
  argv: string[],
  out: (line: string) => void,
  env: Record<string, string | undefined> = process.env,
): Promise<number> {
  const { positionals, values } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: { name: { type: "string" }, json: { type: "boolean" }, sandbox: { type: "boolean" } },
  });
  const [command, arg] = positionals;
  const config = loadConfig(env);
  const logger = createLogger({ level: "warn", name: "keys-cli", destination: process.stderr as never });
  const store = await openGatewayStore(config, logger);
  try {
    const keys = await ApiKeyRepository.open(store);
    switch (command) {
      case "create": {
        if (!arg || !ACCOUNT_ID.test(arg)) {
          out("keys create: give an account id (letters, digits, . _ @ -)");
          return 2;
        }
        const { key, view } = await keys.create(arg, values.name ?? "created with the keys CLI", new Date(), values.sandbox ? "sandbox" : "live");
        if (values.json) out(JSON.stringify({ ...view, key }));
        else {
          out(`key_id:  ${view.key_id}`);
          out(`account: ${view.account}`);
          out(`mode:    ${view.mode}${view.mode === "sandbox" ? ` (records owned by sandbox:${view.account})` : ""}`);
          out(`key:     ${key}`);
          out("Store the key now: it is shown only once and kept only as a hash.");
        }
        return 0;
      }
      case "list": {
        const list = await keys.list(arg);
        if (values.json) out(JSON.stringify(list));
        else
          for (const k of list) {
            out(`${k.key_id}\t${k.account}\t${k.mode}\t${k.prefix}\t${k.revoked_at ? `revoked ${k.revoked_at}` : "active"}\t${k.name}`);
          }
        return 0;
      }
      case "revoke": {
        if (!arg) {
          out("keys revoke: give a key_id (see `keys list`)");
          return 2;
        }
        const done = await keys.revoke(arg);
        out(done ? `revoked ${arg}` : `no key with id ${arg}`);
        return done ? 0 : 1;
      }
      default:
        out(USAGE);
        return command === undefined || command === "help" ? 0 : 2;
    }
  } finally {
    await store.close();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  runKeysCli(process.argv.slice(2), (line) => process.stdout.write(`${line}\n`)).then(
    (code) => process.exit(code),
    (error: unknown) => {
      process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
      process.exit(1);
    },
  );
}
