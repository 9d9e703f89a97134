import { Writable } from "node:stream";
import { createLogger, silentLogger } from "@voiceloc/log";
import { describe, expect, it } from "vitest";
import { FfmpegNotFoundError } from "./errors.ts";
import { isRecentEnough, parseVersionOutput, resolveFfmpeg } from "./resolve.ts";

function memoryLogger() {
  const lines: string[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _enc, done) {
      lines.push(chunk.toString("utf8"));
      done();
    },
  });
  return { logger: createLogger({ level: "debug", destination }), lines };
}

describe("parseVersionOutput", () => {
  it("reads release and snapshot builds", () => {
    expect(parseVersionOutput("ffmpeg version 5.1.9-0+deb12u1 Copyright (c) 2000-2026 the FFmpeg developers\nbuilt with")).toEqual({
      version: "5.1.9-0+deb12u1",
      major: 5,
      year: 2026,
    });
    expect(parseVersionOutput("ffmpeg version n6.1 Copyright (c) 2000-2023")?.major).toBe(6);
    const snapshot = parseVersionOutput("ffmpeg version N-47683-g0e8eb07980-static https://johnvansickle.com/ffmpeg/  Copyright (c) 2000-2018 the FFmpeg developers");
    expect(snapshot).toEqual({ version: "N-47683-g0e8eb07980-static", major: undefined, year: 2018 });
    expect(parseVersionOutput("ffprobe version 4.4.2 Copyright (c) 2007-2021")?.major).toBe(4);
    expect(parseVersionOutput("something else")).toBeUndefined();
  });

  it("judges age by major version, or by copyright year for snapshots", () => {
    expect(isRecentEnough({ version: "5.1", major: 5, year: 2022 }, 5)).toBe(true);
    expect(isRecentEnough({ version: "4.4", major: 4, year: 2021 }, 5)).toBe(false);
    expect(isRecentEnough({ version: "N-1", major: undefined, year: 2018 }, 5)).toBe(false);
    expect(isRecentEnough({ version: "N-2", major: undefined, year: 2024 }, 5)).toBe(true);
  });
});

describe("resolveFfmpeg", () => {
  it("finds the system ffmpeg 5+ and ffprobe on the search path", async () => {
    const found = await resolveFfmpeg({ logger: silentLogger(), searchPath: "/nonexistent:/usr/bin" });
    expect(found).toMatchObject({ ffmpeg: "/usr/bin/ffmpeg", ffprobe: "/usr/bin/ffprobe", source: "system", ffprobeSource: "system" });
    expect(found.version).toMatch(/^\d+\.\d+/);
  });

  it("uses the configured paths as given", async () => {
    const found = await resolveFfmpeg({ logger: silentLogger(), ffmpegPath: "/usr/bin/ffmpeg", ffprobePath: "/usr/bin/ffprobe", searchPath: "" });
    expect(found.source).toBe("configured");
    expect(found.ffprobeSource).toBe("configured");
  });

  it("refuses a configured path that does not run, naming the setting", async () => {
    const error = await resolveFfmpeg({ logger: silentLogger(), ffmpegPath: "/nonexistent/ffmpeg" }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(FfmpegNotFoundError);
    expect(error).toMatchObject({ name: "FfmpegNotFoundError", code: "FFMPEG_NOT_FOUND" });
    expect((error as Error).message).toContain("FFMPEG_PATH");
  });

  it("falls back to the bundled builds with a warning when nothing is on the path", async () => {
    const { logger, lines } = memoryLogger();
    const found = await resolveFfmpeg({ logger, searchPath: "/nonexistent" });
    expect(found.source).toBe("bundled");
    expect(found.ffprobeSource).toBe("bundled");
    expect(found.ffmpeg).toContain("@ffmpeg-installer");
    const warning = lines.map((l) => JSON.parse(l) as { level: string; msg: string }).find((l) => l.level === "warn");
    expect(warning?.msg).toMatch(/2018 build/);
  });
});
