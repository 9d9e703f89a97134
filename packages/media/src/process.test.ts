/**
 * runProcess for programs that need a file as standard input (the `apertium` wrapper script re-opens
 * /dev/stdin) and that start others at once (niced from the start through `nice`), under the
 * address-space limit like every child. Linux only (the images are Linux).
 */
import { writeFile } from "node:fs/promises";
import { getPriority } from "node:os";
import { join } from "node:path";
import { tempDir } from "@voiceloc/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runProcess } from "./process.ts";

const MiB = 1024 * 1024;
let dir: Awaited<ReturnType<typeof tempDir>>;
let input: string;

beforeAll(async () => {
  dir = await tempDir("voiceloc-process-");
  input = join(dir.path, "input.txt");
  await writeFile(input, "Bonjour à tous.\n");
});

afterAll(async () => {
  await dir.cleanup();
});

describe("runProcess with a file as standard input, niced from the start", () => {
  it("a script that re-opens /dev/stdin reads the file, and what it starts runs niced and limited", async () => {
    const result = await runProcess("/bin/sh", ["-c", "cat /dev/stdin; ulimit -v; nice"], {
      stdinFile: input,
      niceFromStart: true,
      nice: 7,
      memoryLimitBytes: 300 * MiB,
      collectStdout: true,
      timeoutMs: 30_000,
    });
    expect(result).toMatchObject({ exitCode: 0, memoryLimitBytes: 300 * MiB });
    expect(result.stdout.toString("utf8").split("\n")).toEqual(["Bonjour à tous.", String(300 * 1024), String(Math.max(7, getPriority())), ""]);
  });

  it("a program that is missing is not started (ENOENT), through `nice` and the limit as without them", async () => {
    for (const memoryLimitBytes of [0, 300 * MiB]) {
      const result = await runProcess(join(dir.path, "no-such-program"), [], { stdinFile: input, niceFromStart: true, nice: 10, memoryLimitBytes, timeoutMs: 30_000 });
      expect(result.spawnError?.code, `limit ${memoryLimitBytes}`).toBe("ENOENT");
    }
  });

  it("an input file that cannot be opened is a spawn error, and nothing runs", async () => {
    const result = await runProcess("/bin/sh", ["-c", "echo ran"], { stdinFile: join(dir.path, "missing.txt"), collectStdout: true });
    expect(result.spawnError?.code).toBe("ENOENT");
    expect(result.stdout.length).toBe(0);
  });
});
