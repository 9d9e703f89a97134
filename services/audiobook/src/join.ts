import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { concatListContent, GLOBAL_ARGS, inputArgs, withTempOutput, type MediaToolkit } from "@voiceloc/media";

/**
 * ffmpeg arguments that join MP3 files listed in a concat list into one MP3 without re-encoding
 * (`-c copy`): the concat demuxer opens one chunk at a time and packets are copied as they are, so
 * memory and time do not grow with more than the file size. Only the mp3 demuxer may open the
 * listed files. The muxer writes a fresh Xing/Info header for the whole file.
 */
export function buildMp3CopyConcatArgs(listFile: string, output: string): string[] {
  return [
    ...GLOBAL_ARGS,
    "-safe", "0",
    ...inputArgs(listFile, ["concat", "mp3"], "concat"),
    "-map", "0:a:0",
    "-vn", "-sn", "-dn", "-map_metadata", "-1",
    "-c", "copy",
    "-write_xing", "1",
    "-id3v2_version", "0",
    "-f", "mp3",
    "-y", output,
  ];
}

/** Joins MP3 chunks (same voice, so the same sample rate and channels) into `outPath` by copying. */
export async function joinMp3Chunks(
  media: MediaToolkit,
  request: { inputs: readonly string[]; outPath: string; workDir: string; signal?: AbortSignal | undefined },
): Promise<string> {
  const listFile = join(request.workDir, "chunks.ffconcat");
  await writeFile(listFile, concatListContent(request.inputs), "utf8");
  await withTempOutput(request.outPath, (temp) =>
    media.run(buildMp3CopyConcatArgs(listFile, temp), { signal: request.signal, what: "Joining the audio book" }),
  );
  return request.outPath;
}
