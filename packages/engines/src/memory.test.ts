/**
 * An engine program out of memory (over CHILD_MEMORY_LIMIT_MB, or killed by the kernel) is said in
 * plain words under its own code, which neither the engine registry (no other voice is tried) nor the
 * task policy (never retried) treats as a passing fault.
 */
import type { ProcessResult } from "@voiceloc/media";
import { describe, expect, it } from "vitest";
import { engineFailure } from "./cli.ts";

const result = (overrides: Partial<ProcessResult>): ProcessResult => ({
  exitCode: null,
  exitSignal: null,
  aborted: false,
  timedOut: false,
  stdout: Buffer.alloc(0),
  stdoutTruncated: false,
  stderrTail: [],
  memoryLimitBytes: 0,
  ...overrides,
});

describe("an engine program out of memory", () => {
  it("killed by the kernel (SIGKILL we did not send): SYNTHESIS_OUT_OF_MEMORY, in plain words", () => {
    const error = engineFailure("flite", result({ exitSignal: "SIGKILL" }), "flite:slt");
    expect(error).toMatchObject({ code: "SYNTHESIS_OUT_OF_MEMORY", message: "The flite speech engine stopped: it needed more memory than the server has." });
  });

  it("an allocation refused under the limit names the limit", () => {
    const error = engineFailure("espeak-ng", result({ exitCode: 1, stderrTail: ["espeak-ng: Cannot allocate memory"], memoryLimitBytes: 512 * 1024 * 1024 }), "espeak:en-us");
    expect(error).toMatchObject({
      code: "SYNTHESIS_OUT_OF_MEMORY",
      message: "The espeak-ng speech engine stopped: it needed more memory than the 512 MiB this server allows one program (CHILD_MEMORY_LIMIT_MB).",
    });
  });

  it("a stop we asked for (timeout) and an ordinary failure are not", () => {
    expect(engineFailure("flite", result({ exitSignal: "SIGKILL", timedOut: true }), "flite:slt")).toMatchObject({ code: "SYNTHESIS_FAILED" });
    expect(engineFailure("flite", result({ exitCode: 2, stderrTail: ["bad voice"] }), "flite:slt")).toMatchObject({ code: "SYNTHESIS_FAILED" });
  });
});
