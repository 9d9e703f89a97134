#!/usr/bin/env node
// `pnpm voiceloc …` at the repository root: the CLI's TypeScript source (no build), run in the
// directory pnpm was started from (INIT_CWD), so relative file arguments mean what the user typed.
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";

const cli = fileURLToPath(new URL("../packages/sdk/src/cli.ts", import.meta.url));
const tsx = import.meta.resolve("tsx");
const child = spawn(process.execPath, ["--conditions=@voiceloc/source", "--import", tsx, cli, ...process.argv.slice(2)], {
  cwd: process.env.INIT_CWD || process.cwd(),
  stdio: "inherit",
});
// Signals sent to this process are passed on (the CLI exits 130 on the first, at once on a second).
for (const signal of ["SIGINT", "SIGTERM"]) process.on(signal, () => child.kill(signal));
child.on("exit", (code, signal) => process.exit(code ?? (signal === "SIGINT" ? 130 : 1)));
