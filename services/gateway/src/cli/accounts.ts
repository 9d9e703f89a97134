/**
 * Dashboard account administration on the configured store (DATA_DIR or MONGODB_URL):
 * `pnpm accounts create <email> --password-stdin [--approve]`, `pnpm accounts approve <email>`,
 * `pnpm accounts reset-link <email>`, `pnpm accounts revoke-sessions <email>`.
 */
import { parseArgs } from "node:util";
import { loadConfig } from "@voiceloc/config";
import { createLogger } from "@voiceloc/log";
import { AccountExistsError, AccountRepository, normaliseEmail, passwordProblem } from "../accounts/accounts.ts";
import { PasswordResets } from "../accounts/resets.ts";
import { SessionStore } from "../accounts/sessions.ts";
import { openGatewayStore } from "../gateway.ts";

const USAGE = `usage:
  accounts create <email> --password-stdin [--approve]   create a dashboard account (password read from standard input)
  accounts approve <email>                               approve the account's live keys (LIVE_KEYS=approval)
  accounts reset-link <email>                            print a one-time password reset link (RESET_LINK_TTL_SECONDS)
  accounts revoke-sessions <email>                       sign the account out of every dashboard session`;

/** Reads standard input to its end; one trailing newline (from echo or a here-string) is not part of the password. */
async function readAll(input: AsyncIterable<Buffer | string>): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of input) chunks.push(typeof chunk === "string" ? Buffer.from(chunk) : chunk);
  return Buffer.concat(chunks).toString("utf8").replace(/\r?\n$/, "");
}

export async function runAccountsCli(
  argv: string[],
  out: (line: string) => void,
  env: Record<string, string | undefined> = process.env,
  stdin: AsyncIterable<Buffer | string> = process.stdin,
): Promise<number> {
  const { positionals, values } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: { "password-stdin": { type: "boolean" }, approve: { type: "boolean" } },
  });
  const [command, arg] = positionals;
  if (!command || command === "help" || !["create", "approve", "reset-link", "revoke-sessions"].includes(command)) {
    out(USAGE);
    return command === undefined || command === "help" ? 0 : 2;
  }
  const email = normaliseEmail(arg ?? "");
  if (!email) {
    out(`accounts ${command}: give an email address`);
    return 2;
  }
  let password = "";
  if (command === "create") {
    if (!values["password-stdin"]) {
      out("accounts create: pass --password-stdin and write the password to standard input (never on the command line)");
      return 2;
    }
    password = await readAll(stdin);
    const problem = passwordProblem(password);
    if (problem) {
      out(`accounts create: ${problem}`);
      return 2;
    }
  }
  const config = loadConfig(env);
  const logger = createLogger({ level: "warn", name: "accounts-cli", destination: process.stderr as never });
  const store = await openGatewayStore(config, logger);
  try {
    const accounts = await AccountRepository.open(store);
    switch (command) {
      case "create": {
        try {
          await accounts.create(email, password, { approved: values.approve === true });
        } catch (error) {
          if (error instanceof AccountExistsError) {
            out(`accounts create: an account for ${email} exists already (reset its password with accounts reset-link)`);
            return 1;
          }
          throw error;
        }
        out(`created ${email}${values.approve ? " (approved)" : ""}; sign in at ${config.publicBaseUrl}/dashboard/login`);
        return 0;
      }
      case "approve": {
        const done = await accounts.approve(email);
        out(done ? `approved ${email}: its live keys work with LIVE_KEYS=approval` : `no account ${email}`);
        return done ? 0 : 1;
      }
      case "reset-link": {
        if (!(await accounts.get(email))) {
          out(`no account ${email}`);
          return 1;
        }
        const resets = await PasswordResets.open(store);
        const { token, expiresAt } = await resets.create(email, config.accounts.resetLinkTtlSeconds);
        out(`${config.publicBaseUrl}/dashboard/reset?token=${token}`);
        out(`Works once, until ${expiresAt}. Hand it to ${email} privately.`);
        return 0;
      }
      default: {
        const sessions = await SessionStore.open(store, { idleSeconds: config.accounts.sessionIdleSeconds, maxSeconds: config.accounts.sessionMaxSeconds });
        const n = await sessions.deleteForAccount(email);
        out(`ended ${n} session${n === 1 ? "" : "s"} of ${email}`);
        return 0;
      }
    }
  } finally {
    await store.close();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  runAccountsCli(process.argv.slice(2), (line) => process.stdout.write(`${line}\n`)).then(
    (code) => process.exit(code),
    (error: unknown) => {
      process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
      process.exit(1);
    },
  );
}
