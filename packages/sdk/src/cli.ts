#!/usr/bin/env node
/**
 * The `voiceloc` executable: reads VOICELOC_URL / VOICELOC_API_KEY, turns Ctrl-C and SIGTERM into an
 * abort (exit 130), and runs the program.
 */
import { InterruptedError, runCli } from "./cli/run.ts";

const controller = new AbortController();
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.on(signal, () => {
    // the first stops waiting (the command prints what goes on and exits 130); a second exits at once
    if (controller.signal.aborted) process.exit(130);
    controller.abort(new InterruptedError(signal));
  });
}
const code = await runCli(process.argv.slice(2), {
  env: { url: process.env.VOICELOC_URL, apiKey: process.env.VOICELOC_API_KEY },
  stdout: process.stdout,
  stderr: process.stderr,
  cwd: process.cwd(),
  signal: controller.signal,
});
process.exit(code);
