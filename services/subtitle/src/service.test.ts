import { randomUUID } from "node:crypto";
import { FILE_NOT_AVAILABLE } from "@voiceloc/fetch";
import { readFile, writeFile } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import { createApertiumEngine, createMtRegistry, createOpenAiTranslator } from "@voiceloc/engines";
import { join } from "node:path";
import { GLOBAL_ARGS, inputArgs, runProcess, UNTRUSTED_MEDIA_DEMUXERS } from "@voiceloc/media";
import {
  freePort,
  makeHugeFrameVideo,
  makeTestVideo,
  tempDir,
  withClaimedMp4Duration,
  withClaimedMp4PictureSize,
  withClaimedMp4SampleSizes,
} from "@voiceloc/testing";
import { checkpointKey, SEQ_DELIVERY_SPAN } from "@voiceloc/worker";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { textLength } from "./cues.ts";
import { parseSubtitles } from "./formats.ts";
import { SUBTITLE_FONTS } from "./languages.ts";
import { burnInLayout } from "./layout.ts";
import {
  createStack,
  grayFrame,
  makeDarkVideo,
  makeSpokenVideo,
  meanDifference,
  missingGlyphs,
  startService,
  textRows,
  type ServiceHarness,
  type SpokenVideo,
  type Stack,
} from "./testing/harness.ts";

const MAX_SECONDS = 20;
/** The sandbox's picture limit in these tests: 640×480. */
const SANDBOX_MAX_PIXELS = 640 * 480;

let stack: Stack;
let root: { path: string; cleanup: () => Promise<void> };
let video: SpokenVideo;
let h: ServiceHarness;

beforeAll(async () => {
  stack = await createStack();
  root = await tempDir("voiceloc-subtitle-media-");
  video = await makeSpokenVideo(stack.media, root.path, "talk.mp4");
  h = await startService(stack, { mediaRoot: root.path, maxSeconds: MAX_SECONDS, service: { sandboxMaxPixels: SANDBOX_MAX_PIXELS } });
});

afterAll(async () => {
  await h?.cleanup();
  await root?.cleanup();
});

/** MD5 of one stream's packets, copied (equal when a stream was copied, not re-encoded). */
async function streamMd5(path: string, stream: "a:0" | "v:0"): Promise<string> {
  const result = await runProcess(
    stack.media.binaries.ffmpeg,
    [...GLOBAL_ARGS, "-loglevel", "error", ...inputArgs(path, UNTRUSTED_MEDIA_DEMUXERS), "-map", `0:${stream}`, "-c", "copy", "-f", "md5", "pipe:1"],
    { collectStdout: true },
  );
  expect(result.exitCode).toBe(0);
  return result.stdout.toString("utf8").trim();
}

interface SubtitleStreamInfo {
  codec_type?: string;
  codec_name?: string;
  tags?: { language?: string };
}

async function streams(path: string): Promise<SubtitleStreamInfo[]> {
  const result = await runProcess(
    stack.media.binaries.ffprobe,
    ["-v", "error", "-print_format", "json", "-show_streams", ...inputArgs(path, UNTRUSTED_MEDIA_DEMUXERS)],
    { collectStdout: true },
  );
  return (JSON.parse(result.stdout.toString("utf8")) as { streams: SubtitleStreamInfo[] }).streams;
}

/**
 * An MP4 whose headers (mvhd, mdhd, tkhd; version 0 boxes as ffmpeg writes them) claim 2 seconds,
 * whatever its samples hold.
 */
function claimTwoSeconds(file: Buffer): Buffer {
  const out = Buffer.from(file);
  const each = (tag: string, fn: (at: number) => void) => {
    for (let i = out.indexOf(tag); i >= 0; i = out.indexOf(tag, i + 4)) if (out[i + 4] === 0) fn(i + 4);
  };
  // mvhd/mdhd: version+flags, creation, modification, timescale, duration.
  for (const tag of ["mvhd", "mdhd"]) each(tag, (box) => out.writeUInt32BE(out.readUInt32BE(box + 12) * 2, box + 16));
  // tkhd: version+flags, creation, modification, track id, reserved, duration (in the movie timescale).
  each("tkhd", (box) => out.writeUInt32BE(0, box + 20));
  return out;
}

async function completed(taskId: string) {
  const end = await h.finished(taskId);
  expect(end.error ?? null, "task error").toBeNull();
  expect(end.status).toBe("completed");
  return { end, events: h.events.filter((e) => e.task_id === taskId) };
}

const words = (text: string) => text.toLowerCase().replace(/[^\p{L}\p{N}' ]+/gu, " ").split(/\s+/).filter(Boolean);

describe("subtitle service (in-process bus)", () => {
  it("English → English burn_in: cues match the recogniser, the picture carries text low in the frame, the audio is copied", async () => {
    const id = await h.submit({ file: "talk.mp4", source: "English", target: "English", mode: "burn_in", format: "srt" });
    const { end, events } = await completed(id);
    expect(end.result_key).toBe(`results/subtitle/${id}.mp4`);
    expect(end.subtitle_key).toBe(`results/subtitle/${id}.srt`);

    // Progress rises through the stages and never goes back.
    const progress = events.map((e) => e.progress);
    expect(progress).toEqual([...progress].sort((a, b) => a - b));
    expect(new Set(progress.filter((p) => p > 0 && p < 100)).size).toBeGreaterThanOrEqual(3);

    const srt = await readFile(await h.download(end.subtitle_key as string), "utf8");
    expect(srt).toMatch(/^1\r\n\d\d:\d\d:\d\d,\d{3} --> \d\d:\d\d:\d\d,\d{3}\r\n/);
    const cues = parseSubtitles(srt);
    expect(cues.length).toBeGreaterThanOrEqual(1);
    for (const cue of cues) {
      expect(cue.end).toBeGreaterThan(cue.start);
      expect(cue.end).toBeLessThanOrEqual(video.durationSeconds);
    }
    for (let i = 1; i < cues.length; i++) expect(cues[i]?.start).toBeGreaterThan(cues[i - 1]?.end ?? Number.NaN);
    // The text is what the recogniser hears in the same audio run directly.
    const direct = await stack.stt.transcribe({ path: video.speechPath, language: "English" });
    expect(words(cues.flatMap((c) => c.lines).join(" "))).toEqual(words(direct.text));
    expect(words(direct.text)).toEqual(expect.arrayContaining(["weather", "coffee"]));

    const burned = await h.download(end.result_key as string);
    const info = await stack.media.probe(burned);
    expect(Math.abs(info.durationSeconds - video.durationSeconds)).toBeLessThanOrEqual(0.5);
    expect(info.video?.codec).toBe("h264");
    expect(info.audio?.codec).toBe("aac");
    expect(await streamMd5(burned, "a:0")).toBe(await streamMd5(video.path, "a:0"));

    // At a cue's middle the lower part of the frame differs from the original; the upper part does not.
    const cue = cues[0];
    const at = ((cue?.start ?? 0) + (cue?.end ?? 0)) / 2;
    const before = await grayFrame(stack.media, video.path, at);
    const after = await grayFrame(stack.media, burned, at);
    const lower = meanDifference(before.pixels, after.pixels, before.width, Math.floor(before.height * 0.7), before.height);
    const upper = meanDifference(before.pixels, after.pixels, before.width, 0, Math.floor(before.height * 0.5));
    expect(lower, `lower ${lower}, upper ${upper}`).toBeGreaterThan(1.5);
    expect(lower).toBeGreaterThan(upper * 10);
  });

  it("side_file + vtt: a WEBVTT file and an MP4 with an English mov_text track, picture and audio copied", async () => {
    const id = await h.submit({ file: "talk.mp4", source: "English", target: "English", mode: "side_file", format: "vtt" });
    const { end } = await completed(id);
    expect(end.subtitle_key).toBe(`results/subtitle/${id}.vtt`);
    expect(end.result_key).toBe(`results/subtitle/${id}.mp4`);
    const vtt = await readFile(await h.download(end.subtitle_key as string), "utf8");
    expect(vtt.startsWith("WEBVTT\n\n")).toBe(true);
    expect(vtt).toMatch(/\d\d:\d\d:\d\d\.\d{3} --> \d\d:\d\d:\d\d\.\d{3}\n/);
    expect(words(parseSubtitles(vtt).flatMap((c) => c.lines).join(" "))).toEqual(expect.arrayContaining(["weather"]));

    const soft = await h.download(end.result_key as string);
    const subtitle = (await streams(soft)).filter((s) => s.codec_type === "subtitle");
    expect(subtitle).toHaveLength(1);
    expect(subtitle[0]?.codec_name).toBe("mov_text");
    expect(subtitle[0]?.tags?.language).toBe("eng");
    expect(await streamMd5(soft, "v:0")).toBe(await streamMd5(video.path, "v:0"));
    expect(await streamMd5(soft, "a:0")).toBe(await streamMd5(video.path, "a:0"));
  });

  it("a video whose headers claim 36,000 s (far over the limit) is subtitled: its decoded sound decides", async () => {
    const file = "claims-ten-hours.mp4";
    await writeFile(join(root.path, file), withClaimedMp4Duration(await readFile(video.path), 36_000));
    expect((await stack.media.probe(join(root.path, file))).durationSeconds).toBeGreaterThan(35_000);
    const id = await h.submit({ file, source: "English", target: "English", mode: "side_file", format: "srt" });
    const { end } = await completed(id);
    const cues = parseSubtitles(await readFile(await h.download(end.subtitle_key ?? ""), "utf8"));
    expect(cues.length).toBeGreaterThanOrEqual(1);
    // Cues end within the sound the file really holds, not the ten hours it claims.
    for (const cue of cues) expect(cue.end).toBeLessThanOrEqual(video.durationSeconds + 0.5);
  });

  it("English → Spanish: translated cues at the speech's times", async () => {
    const id = await h.submit({ file: "talk.mp4", source: "English", target: "Spanish", mode: "side_file", format: "srt" });
    const { end } = await completed(id);
    const cues = parseSubtitles(await readFile(await h.download(end.subtitle_key as string), "utf8"));
    const text = cues.flatMap((c) => c.lines).join(" ").toLowerCase();
    expect(text).toMatch(/tiempo|café|caliente/);
    expect(text).not.toMatch(/weather|coffee/);
    expect(cues[0]?.start ?? 0).toBeGreaterThanOrEqual(0.3);
    expect(cues.at(-1)?.end ?? Infinity).toBeLessThanOrEqual(video.durationSeconds);
  });

  it("resumes from a stored transcript without recognising again", async () => {
    const id = randomUUID();
    const transcript = {
      version: 1,
      language: "English",
      mediaSeconds: video.durationSeconds,
      segments: [
        { start: 0.6, end: 1.8, text: "good morning", words: [{ word: "good", start: 0.6, end: 1.0 }, { word: "morning", start: 1.1, end: 1.8 }] },
        { start: 3.5, end: 4.6, text: "thank you" },
      ],
    };
    await h.blobs.put(checkpointKey(id, "transcript.json"), Buffer.from(JSON.stringify(transcript)));
    await h.submit({ id, file: "talk.mp4", source: "English", target: "English", mode: "side_file", format: "srt" });
    const { end } = await completed(id);
    const cues = parseSubtitles(await readFile(await h.download(end.subtitle_key as string), "utf8"));
    expect(cues.map((c) => c.lines.join(" "))).toEqual(["Good morning", "Thank you"]);
    expect(cues[0]?.start).toBe(0.6);
    expect(await h.blobs.list(`tasks/${id}/`)).toEqual([]);
    // The delivery opens with the work already done (recognition; no translation needed), not at 0.
    const opening = [...h.events.filter((e) => e.task_id === id)].sort((x, y) => x.seq - y.seq)[0];
    expect(opening?.status).toBe("processing");
    expect(opening?.progress).toBe(70);
  });

  it("a transcript checkpoint of another shape is not trusted: recognition is redone", async () => {
    const id = randomUUID();
    const foreign = { version: 1, language: "English", mediaSeconds: video.durationSeconds, segments: [{ start: "0.6", end: 1.8, text: "good morning" }] };
    await h.blobs.put(checkpointKey(id, "transcript.json"), Buffer.from(JSON.stringify(foreign)));
    await h.submit({ id, file: "talk.mp4", source: "English", target: "English", mode: "side_file", format: "srt" });
    const { end, events } = await completed(id);
    expect(events.map((e) => e.progress)[0]).toBe(0);
    const cues = parseSubtitles(await readFile(await h.download(end.subtitle_key as string), "utf8"));
    expect(words(cues.flatMap((c) => c.lines).join(" "))).toEqual(expect.arrayContaining(["weather", "coffee"]));
    expect(words(cues.flatMap((c) => c.lines).join(" "))).not.toContain("morning");
  });

  describe("a portrait phone video (stored 1280×720, turned upright by its display matrix)", () => {
    const SENTENCE = "And watch the birds fly over the water near the old bridge in the cold morning light.";
    let seconds: number;

    beforeAll(async () => {
      const spoken = await makeSpokenVideo(stack.media, root.path, "bridge.mp4", { sentences: [SENTENCE] });
      seconds = spoken.durationSeconds;
      await makeDarkVideo(stack.media, join(root.path, "phone.mp4"), { size: "1280x720", seconds, soundFrom: spoken.speechPath, rotation: 90 });
    });

    it("burn_in draws every cue in at most two lines, as many as the cue has, within 12 % of the upright frame's height", async () => {
      expect((await stack.media.probe(join(root.path, "phone.mp4"))).video).toMatchObject({ width: 1280, height: 720, rotation: 90 });
      const id = await h.submit({ file: "phone.mp4", source: "English", target: "English", mode: "burn_in", format: "srt" });
      const { end } = await completed(id);
      const cues = parseSubtitles(await readFile(await h.download(end.subtitle_key as string), "utf8"));
      // A long sentence was heard (long enough to need two lines of a landscape frame's cues).
      expect(cues.flatMap((c) => c.lines).join(" ").length).toBeGreaterThanOrEqual(50);
      const fits = burnInLayout({ width: 720, height: 1280 }, "English").rules.maxLineChars;
      for (const line of cues.flatMap((c) => c.lines)) expect(textLength(line), line).toBeLessThanOrEqual(fits);

      const burned = await h.download(end.result_key as string);
      const info = await stack.media.probe(burned);
      expect(info.video).toMatchObject({ width: 720, height: 1280 });
      expect(info.video?.rotation).toBeUndefined();
      for (const cue of cues) {
        const frame = await grayFrame(stack.media, burned, (cue.start + cue.end) / 2);
        const { runs, band } = textRows(frame);
        const seen = `${JSON.stringify(cue.lines)}: text rows ${JSON.stringify(runs)}, band ${band} of ${frame.height}`;
        expect(cue.lines.length, seen).toBeLessThanOrEqual(2);
        expect(runs.length, seen).toBe(cue.lines.length);
        expect(band / frame.height, seen).toBeLessThanOrEqual(0.12);
      }
    });
  });

  describe("a Theora + Vorbis video (codecs MP4 cannot carry)", () => {
    beforeAll(async () => {
      await stack.media.run([
        ...GLOBAL_ARGS,
        "-f", "lavfi", "-i", `testsrc=duration=${video.durationSeconds}:size=320x240:rate=25`,
        ...inputArgs(video.speechPath, UNTRUSTED_MEDIA_DEMUXERS),
        "-map", "0:v:0", "-map", "1:a:0", "-af", `apad,atrim=end=${video.durationSeconds}`,
        "-c:v", "libtheora", "-q:v", "5", "-c:a", "libvorbis", "-t", String(video.durationSeconds),
        "-f", "ogg", "-y", join(root.path, "talk.ogv"),
      ]);
    });

    it("burn_in writes Matroska with the Vorbis audio copied", async () => {
      const id = await h.submit({ file: "talk.ogv", source: "English", target: "English", mode: "burn_in" });
      const { end } = await completed(id);
      expect(end.result_key).toBe(`results/subtitle/${id}.mkv`);
      const burned = await h.download(end.result_key as string);
      const info = await stack.media.probe(burned);
      expect(info.format).toContain("matroska");
      expect(info.audio?.codec).toBe("vorbis");
      expect(await streamMd5(burned, "a:0")).toBe(await streamMd5(join(root.path, "talk.ogv"), "a:0"));
    });

    it("side_file fails at once in plain words: the picture would need re-encoding", async () => {
      const id = await h.submit({ file: "talk.ogv", source: "English", target: "English", mode: "side_file" });
      const end = await h.finished(id);
      expect(end.status).toBe("failed");
      expect(end.error).toBe("The file is not a video we can read: its picture cannot be carried in an MP4 file without re-encoding; use mode burn_in.");
      // Refused before recognition: the progress never passed the probe.
      expect(Math.max(...h.events.filter((e) => e.task_id === id).map((e) => e.progress))).toBeLessThan(10);
    });
  });

  describe("refused input fails at once with a plain reason, and the worker goes on", () => {
    beforeAll(async () => {
      const dir = root.path;
      await writeFile(join(dir, "random.mp4"), Buffer.from(Array.from({ length: 64 * 1024 }, (_, i) => (i * 7919 + 13) % 251)));
      await writeFile(join(dir, "broken.mp4"), (await readFile(video.path)).subarray(0, 4096));
      const playlist = [
        "#EXTM3U",
        "#EXT-X-VERSION:3",
        "#EXT-X-TARGETDURATION:10",
        "#EXTINF:10.0,",
        `file://${video.path}`,
        "#EXTINF:10.0,",
        "http://127.0.0.1:9/secret.ts",
        "#EXT-X-ENDLIST",
        "",
      ].join("\n");
      await writeFile(join(dir, "playlist.m3u8"), playlist);
      await writeFile(join(dir, "playlist.mp4"), playlist);
      await writeFile(join(dir, "list.ffconcat"), `ffconcat version 1.0\nfile '${video.path}'\nfile 'http://127.0.0.1:9/x.mp4'\n`);
      await writeFile(join(dir, "list.mp4"), `ffconcat version 1.0\nfile '${video.path}'\n`);
      await makeTestVideo(3, join(dir, "silent-film.mp4"), { noAudio: true });
      await makeTestVideo(MAX_SECONDS + 5, join(dir, "long.mp4"));
      await writeFile(join(dir, "lying-header.mp4"), claimTwoSeconds(await readFile(join(dir, "long.mp4"))));
      // 64-megapixel frames in a 1 MB file whose headers say 640×480: a burn-in would need GBs.
      const huge = await makeHugeFrameVideo(8000, 8000, join(dir, "huge-frames-honest.mp4"), { withSpeechFrom: video.speechPath, seconds: 3 });
      await writeFile(join(dir, "huge-frames.mp4"), withClaimedMp4PictureSize(await readFile(huge), 640, 480));
      await makeTestVideo(2, join(dir, "hd.mp4"), { size: "1280x720" });
      // every sample claimed 2 GB long in a file of a few hundred KB
      await writeFile(join(dir, "lying-sample-sizes.mp4"), withClaimedMp4SampleSizes(await readFile(video.path)));
    }, 120_000);

    const cases: { file: string; source?: "English" | "Spanish"; account?: string; error: RegExp }[] = [
      { file: "random.mp4", error: /^The file is not a video we can read: it (is damaged or is not a video file|is not in a supported video format)/ },
      { file: "broken.mp4", error: /^The file is not a video we can read: it is damaged or is not a video file\.$/ },
      { file: "playlist.m3u8", error: /^The file is not a video we can read: it is not in a supported video format/ },
      { file: "playlist.mp4", error: /^The file is not a video we can read: it is not in a supported video format/ },
      { file: "list.ffconcat", error: /^The file is not a video we can read: it is not in a supported video format/ },
      { file: "list.mp4", error: /^The file is not a video we can read: it is not in a supported video format/ },
      { file: "silent-film.mp4", error: /^The file is not a video we can read: it has no audio track to take speech from\.$/ },
      { file: "long.mp4", error: /^The video is longer than the 20 seconds this service subtitles/ },
      { file: "lying-header.mp4", error: /^The video is longer than the 20 seconds this service subtitles/ },
      { file: "lying-sample-sizes.mp4", error: /^The file is not a video we can read: it is damaged or is not a video file\.$/ },
      {
        file: "huge-frames.mp4",
        error: /^The video's picture is 8000×8000 pixels \(64 megapixels\), more than the 35\.4 megapixels this service takes \(MAX_VIDEO_PIXELS\): send a smaller video\.$/,
      },
      {
        file: "hd.mp4",
        account: "sandbox:alice",
        error: /^The video's picture is 1280×720 pixels \(0\.92 megapixels\), more than the 0\.31 megapixels this service takes \(SANDBOX_MAX_VIDEO_PIXELS\): send a smaller video or use a live key\.$/,
      },
      { file: "talk.mp4", source: "Spanish", error: /^Speech recognition in Spanish is not available with the installed engines \(recognition languages: English\)\.$/ },
      { file: "nowhere/missing.mp4", error: new RegExp(`^${FILE_NOT_AVAILABLE.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}$`) },
    ];
    it("the lying header really claims 2 s (so only decoding shows the length)", async () => {
      expect((await stack.media.probe(join(root.path, "lying-header.mp4"))).durationSeconds).toBeLessThanOrEqual(2);
    });

    it.each(cases)("$file ($source $account)", async ({ file, source, account, error }) => {
      const id = await h.submit({ file, source: source ?? "English", target: "English", ...(account === undefined ? {} : { account }) });
      const end = await h.finished(id);
      expect(end.status).toBe("failed");
      expect(end.error).toMatch(error);
      // Plain words: no paths of this machine, addresses, or ffmpeg's own output.
      expect(end.error).not.toContain(root.path);
      expect(end.error).not.toMatch(/127\.0\.0\.1|ffmpeg|ffprobe|stderr|\bat .*\.ts:\d+/i);
      // Failed at once: one delivery.
      const seqs = h.events.filter((e) => e.task_id === id).map((e) => e.seq);
      expect(Math.max(...seqs)).toBeLessThan(2 * SEQ_DELIVERY_SPAN);
    });

    it("then completes a good video", async () => {
      const id = await h.submit({ file: "talk.mp4", source: "English", target: "English", mode: "side_file", format: "vtt" });
      await completed(id);
    });
  });

  it("starts again after a stop: a task sent after the restart is taken", async () => {
    await h.service.stop();
    await h.service.start();
    const id = await h.submit({ file: "nowhere/missing.mp4", source: "English", target: "English" });
    const end = await h.finished(id, 30_000);
    expect([end.status, end.error]).toEqual(["failed", FILE_NOT_AVAILABLE]);
  });
});

describe("a right-to-left target through an OpenAI-compatible translation server", () => {
  const URDU = "آج موسم بہت اچھا ہے۔";
  let server: Server;
  let urdu: ServiceHarness;
  let requests = 0;

  beforeAll(async () => {
    server = createServer((req, res) => {
      req.resume();
      req.on("end", () => {
        requests++;
        res.writeHead(200, { "Content-Type": "application/json" });
        res.end(JSON.stringify({ choices: [{ index: 0, finish_reason: "stop", message: { role: "assistant", content: URDU } }] }));
      });
    });
    const port = await freePort();
    await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve));
    const translator = createOpenAiTranslator({ baseUrl: `http://127.0.0.1:${port}`, apiKey: "test", model: "stand-in", logger: stack.logger });
    const mt = createMtRegistry([translator, await createApertiumEngine({ logger: stack.logger })]);
    urdu = await startService({ ...stack, mt }, { mediaRoot: root.path, maxSeconds: MAX_SECONDS });
  });

  afterAll(async () => {
    await urdu?.cleanup();
    await new Promise((resolve) => server?.close(resolve));
  });

  it("English → Urdu burn_in draws the Urdu cues with a font that has every glyph", async () => {
    const id = await urdu.submit({ file: "talk.mp4", source: "English", target: "Urdu", mode: "burn_in", format: "srt" });
    const end = await urdu.finished(id);
    expect(end.error ?? null).toBeNull();
    expect(requests).toBeGreaterThan(0);
    const cues = parseSubtitles(await readFile(await urdu.download(end.subtitle_key as string), "utf8"));
    expect(cues.length).toBeGreaterThanOrEqual(1);
    for (const cue of cues) expect(cue.lines.join(" ")).toBe(URDU);

    const burned = await urdu.download(end.result_key as string);
    const cue = cues[0];
    const at = ((cue?.start ?? 0) + (cue?.end ?? 0)) / 2;
    const before = await grayFrame(stack.media, video.path, at);
    const after = await grayFrame(stack.media, burned, at);
    const lower = meanDifference(before.pixels, after.pixels, before.width, Math.floor(before.height * 0.6), before.height);
    const upper = meanDifference(before.pixels, after.pixels, before.width, 0, Math.floor(before.height * 0.4));
    expect(lower, `lower ${lower}, upper ${upper}`).toBeGreaterThan(1.5);
    expect(lower).toBeGreaterThan(upper * 10);
    // The same line drawn with the font the worker chose for Urdu needs no glyph from elsewhere.
    expect(SUBTITLE_FONTS.Urdu).toBe("Noto Nastaliq Urdu");
    expect(await missingGlyphs(stack.media, root.path, video.path, cue?.lines.join(" ") ?? "", SUBTITLE_FONTS.Urdu)).toEqual([]);
  });
});
