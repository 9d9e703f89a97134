/**
 * Subtitle benchmark: a 60-second generated talk (test pattern 640x360 + flite speech), subtitled
 * English → English by the service end to end (bus, fetch, probe, extract, recognise, cues, render,
 * blobs) beside the same ffmpeg and recogniser steps run by hand, in the same run, for both modes.
 * Prints the figures and the ratio (target ≤ 1.15).
 *
 *   pnpm --filter @voiceloc/subtitle bench
 */
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { buildBurnInArgs, buildCappedSpeechWavArgs, buildSoftSubtitleTrackArgs } from "@voiceloc/media";
import { tempDir } from "@voiceloc/testing";
import { buildCues } from "../src/cues.ts";
import { writeSrt } from "../src/formats.ts";
import { burnInLayout } from "../src/layout.ts";
import { DEFAULT_SUBTITLE_MAX_SECONDS } from "../src/pipeline.ts";
import { createStack, makeSpokenVideo, startService } from "../src/testing/harness.ts";

const TALK = [
  "Good evening and welcome to our short talk about the weather in the mountains.",
  "The morning was cold and clear, and the wind came from the north.",
  "By noon the clouds had gathered over the valley and the first rain began to fall.",
  "Farmers brought their animals down from the high fields before the storm.",
  "In the village the market closed early and the children ran home from school.",
  "The river rose quickly during the night but the old bridge held.",
  "Tomorrow will be calmer, with sunshine in the afternoon and a light breeze.",
  "Thank you for listening, and please drive carefully on the wet roads.",
];
const SECONDS = 60;
const RUNS = 2;

const write = (line: string) => process.stdout.write(`${line}\n`);

async function main(): Promise<void> {
  const stack = await createStack();
  const dir = await tempDir("voiceloc-subtitle-bench-");
  try {
    const video = await makeSpokenVideo(stack.media, dir.path, "talk.mp4", { sentences: TALK, seconds: SECONDS, size: "640x360" });
    const h = await startService(stack, { mediaRoot: dir.path, service: { burnIn: { preset: "veryfast" } } });
    const maxSeconds = DEFAULT_SUBTITLE_MAX_SECONDS;

    /** The same steps without the service: extract, recognise, cues, SRT, render. */
    async function byHand(mode: "burn_in" | "side_file"): Promise<number> {
      const t0 = performance.now();
      const wav = join(dir.path, "hand.wav");
      await stack.media.run(buildCappedSpeechWavArgs({ input: video.path, output: wav, maxSeconds: maxSeconds + 1 }));
      const transcript = await stack.stt.transcribe({ path: wav, language: "English" });
      const layout = burnInLayout({ width: 640, height: 360 }, "English");
      const cues = buildCues(transcript.segments, { language: "English", mediaSeconds: SECONDS, ...(mode === "burn_in" ? { rules: layout.rules } : {}) });
      const srt = join(dir.path, "hand.srt");
      await writeFile(srt, writeSrt(cues), "utf8");
      const out = join(dir.path, "hand.mp4");
      await stack.media.run(
        mode === "burn_in"
          ? buildBurnInArgs({ video: video.path, subtitles: srt, output: out, style: layout.style, preset: "veryfast" })
          : buildSoftSubtitleTrackArgs({ video: video.path, subtitles: srt, output: out, language: "eng" }),
      );
      return performance.now() - t0;
    }

    async function service(mode: "burn_in" | "side_file"): Promise<number> {
      const t0 = performance.now();
      const id = await h.submit({ file: "talk.mp4", source: "English", target: "English", mode, format: "srt" });
      const end = await h.finished(id, 600_000);
      if (end.status !== "completed") throw new Error(`the benchmark task failed: ${end.error ?? "no reason"}`);
      return performance.now() - t0;
    }

    write(`subtitle benchmark: ${SECONDS} s talk, 640x360, English → English, best of ${RUNS} runs`);
    for (const mode of ["side_file", "burn_in"] as const) {
      const hand: number[] = [];
      const svc: number[] = [];
      for (let i = 0; i < RUNS; i++) {
        hand.push(await byHand(mode));
        svc.push(await service(mode));
      }
      const bestHand = Math.min(...hand);
      const bestService = Math.min(...svc);
      write(
        `${mode.padEnd(9)}  by hand ${(bestHand / 1000).toFixed(2)} s   service ${(bestService / 1000).toFixed(2)} s   ratio ${(bestService / bestHand).toFixed(3)} (target ≤ 1.15)`,
      );
    }
    await h.cleanup();
  } finally {
    await dir.cleanup();
  }
}

await main();
