/**
 * Voice stream (dubbing) benchmark: a generated 60-second two-speaker video (testsrc picture 640x360,
 * H.264 + AAC; flite `slt` and `rms` taking turns over a brown-noise bed) dubbed English → Spanish
 * with `original_audio: duck` and `speakers: auto`, end to end by the service as a task over a real
 * nats-server (work message published on the bus, fetch, decode, recognise, speakers, translate, a
 * voice per speaker, speech per line, timing fit, the one mix-and-mux run, checkpoints and the result
 * blob), beside the same steps run by hand in the same run, calling the same engines and ffmpeg:
 *
 *   ffmpeg: the sound decoded to 16 kHz mono WAV → pocketsphinx → the lines' starts and speakers
 *   (the service's voice-activity and clustering code) → Apertium (the lines in one call) → the
 *   Spanish voices' pitch measured once per process (as the service does) → each line spoken by its
 *   engine straight to WAV → the same timing fit (ffmpeg `atempo`/cut for the lines that need it) →
 *   the speech placed on one WAV track → the one ffmpeg run that ducks, mixes and muxes.
 *
 * Legs alternate (by hand, service) RUNS times; it prints every run with its ratio, the best of each
 * side and their ratio (target ≤ 1.25), where each side spent its time (by hand: per step; service: from its log
 * lines, each progress stage the worker reports until the next) and the load average as it goes.
 *
 *   pnpm --filter @voiceloc/voice-stream bench          (RUNS=2)
 */
import { randomUUID } from "node:crypto";
import { mkdir, rm } from "node:fs/promises";
import { cpus, loadavg } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { createCatalogBus, createNatsBus } from "@voiceloc/bus";
import { BUS_CATALOG, ISO_639_2_CODES, type Language, type TaskEvent, type VoiceStreamWork } from "@voiceloc/contracts";
import { measurePitch, readPcm16Wav, translateSegments } from "@voiceloc/engines";
import { audioEncodeArgs, buildDubbedVideoArgs, DUB_SAMPLE_RATE, GLOBAL_ARGS, inputArgs, WAV_DEMUXERS } from "@voiceloc/media";
import { createLogger, type Logger } from "@voiceloc/log";
import { makeSpeechWav, startNatsServer, tempDir } from "@voiceloc/testing";
import { clusterSpeakers, speakerPitches, assignVoices } from "../src/speakers.ts";
import { detectSpeech, lineFeatures, refineStarts } from "../src/features.ts";
import { DEFAULT_FADE_SECONDS, fitClip, mergeSegments } from "../src/timing.ts";
import { createStack, startService, type Stack } from "../src/testing/harness.ts";

const SECONDS = 60;
const RUNS = Math.max(1, Number(process.env.RUNS ?? 2));
const TARGET_RATIO = 1.25;
const SOURCE: Language = "English";
const TARGET: Language = "Spanish";
/** As the pipeline: at most this many of the target language's voices are measured for the speakers. */
const VOICE_CANDIDATES = 8;
const RATE = 16_000;

/** The talk: two speakers taking turns (slt, higher; rms, lower), with pauses between lines. */
const TALK: { voice: "flite:slt" | "flite:rms"; text: string }[] = [
  { voice: "flite:slt", text: "Good evening and welcome to the evening news." },
  { voice: "flite:rms", text: "Thank you. The weather was very cold this morning." },
  { voice: "flite:slt", text: "The train to the city left an hour late." },
  { voice: "flite:rms", text: "Many people waited at the station in the rain." },
  { voice: "flite:slt", text: "The market in the old town opened early today." },
  { voice: "flite:rms", text: "Farmers sold fresh bread, apples and cheese." },
  { voice: "flite:slt", text: "In the afternoon the sun came out over the river." },
  { voice: "flite:rms", text: "Children played in the park near the school." },
  { voice: "flite:slt", text: "Tomorrow will be warm with a light wind from the south." },
  { voice: "flite:rms", text: "Please drive carefully on the wet roads tonight." },
  { voice: "flite:slt", text: "That is all for this evening. Thank you for watching." },
  { voice: "flite:rms", text: "Good night, and see you tomorrow." },
];
const LEAD = 1.0;
const PAUSE = 1.4;

const write = (line: string) => process.stdout.write(`${line}\n`);
const s = (ms: number) => `${(ms / 1000).toFixed(2)} s`;
const load = () => loadavg().map((l) => l.toFixed(2)).join(" ");

/** The 60 s video: the talk over a brown-noise bed, under a testsrc picture. */
async function makeVideo(stack: Stack, dir: string): Promise<{ path: string; lines: number }> {
  const scratch = join(dir, ".scratch");
  await mkdir(scratch, { recursive: true });
  const parts: { path: string; seconds: number }[] = [];
  let at = LEAD;
  for (const [i, line] of TALK.entries()) {
    const path = await makeSpeechWav(line.text, { voice: line.voice, path: join(scratch, `line-${i}.wav`) });
    const seconds = await stack.media.encodedAudioDuration(path, "wav");
    if (at + seconds + 0.5 > SECONDS) break;
    parts.push({ path, seconds });
    at += seconds + PAUSE;
  }
  let cursor = LEAD;
  const delays: string[] = [];
  for (const [i, part] of parts.entries()) {
    delays.push(`[${i}:a:0]aresample=${RATE},aformat=sample_fmts=s16:channel_layouts=mono,adelay=delays=${Math.round(cursor * 1000)}:all=1[s${i}]`);
    cursor += part.seconds + PAUSE;
  }
  const sound = join(scratch, "sound.wav");
  await stack.media.run([
    ...GLOBAL_ARGS,
    ...parts.flatMap((p) => inputArgs(p.path, WAV_DEMUXERS)),
    "-filter_complex",
    `${delays.join(";")};${parts.map((_, i) => `[s${i}]`).join("")}amix=inputs=${parts.length}:duration=longest:normalize=0,apad,atrim=duration=${SECONDS}[speech];` +
      `anoisesrc=color=brown:amplitude=0.2:r=${RATE}:seed=7,atrim=duration=${SECONDS}[bed];` +
      `[speech][bed]amix=inputs=2:duration=first:normalize=0,aformat=sample_rates=${RATE}:channel_layouts=mono[out]`,
    "-map", "[out]", "-c:a", "pcm_s16le", "-f", "wav", "-y", sound,
  ]);
  const path = join(dir, "talk.mp4");
  await stack.media.run([
    ...GLOBAL_ARGS,
    "-f", "lavfi", "-i", `testsrc=duration=${SECONDS}:size=640x360:rate=25`,
    ...inputArgs(sound, WAV_DEMUXERS),
    "-map", "0:v:0", "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p",
    "-map", "1:a:0", "-c:a", "aac", "-b:a", "128k",
    "-t", String(SECONDS), "-movflags", "+faststart", "-f", "mp4", "-y", path,
  ]);
  await rm(scratch, { recursive: true, force: true });
  return { path, lines: parts.length };
}

/** Log lines of the service (debug: the worker logs each progress report with its stage), kept in memory. */
function captureLogger(): { logger: Logger; lines: { time: number; msg: string; stage?: string }[] } {
  const lines: { time: number; msg: string; stage?: string }[] = [];
  const logger = createLogger({
    level: "debug",
    destination: {
      write(chunk: string) {
        for (const text of chunk.split("\n")) {
          if (text.trim() === "") continue;
          const line = JSON.parse(text) as { time: string; msg: string; stage?: string };
          lines.push({ time: Date.parse(line.time), msg: line.msg, ...(line.stage === undefined ? {} : { stage: line.stage }) });
        }
      },
    },
  });
  return { logger, lines };
}

/** Log lines of the service that mark a step inside a stage: the voices chosen (their pitch measured first), the mux started. */
const STEP_LINES: Record<string, string> = {
  "a voice per speaker": "speaking the lines + fit",
  "muxing the dubbed video": "mux + store",
};

/**
 * Where the service spent a task's time, from its log lines between `from` and `to` (epoch ms), in
 * order: each stage the worker reported (progress stages; "speaking" first measures the voices) and
 * each step line runs until the next one; the end is `to`.
 */
function stageTimes(lines: readonly { time: number; msg: string; stage?: string }[], from: number, to: number): [string, number][] {
  const marks: { name: string; time: number }[] = [{ name: "queue", time: from }];
  for (const line of lines) {
    if (line.time < from || line.time > to) continue;
    const step = STEP_LINES[line.msg];
    const name = step ?? line.stage;
    if (name === undefined || marks.at(-1)?.name === name) continue;
    // After the voices are chosen, the "speaking" reports are the lines being spoken; once the mux has
    // started, the "placing" reports are its progress.
    if (line.stage === "speaking" && marks.at(-1)?.name === "speaking the lines + fit") continue;
    if (line.stage === "placing the speech on the track" && marks.at(-1)?.name === "mux + store") continue;
    marks.push({ name, time: line.time });
  }
  marks.push({ name: "end", time: to });
  const out: [string, number][] = [];
  for (let i = 0; i + 1 < marks.length; i++) {
    const mark = marks[i];
    const next = marks[i + 1];
    if (mark && next) out.push([mark.name === "speaking" ? "speaking (voices measured)" : mark.name, next.time - mark.time]);
  }
  return out;
}

async function main(): Promise<void> {
  const stack = await createStack();
  const { media, tts, mt, stt } = stack;
  if (!mt.capabilities().pairs.some((p) => p.source === SOURCE && p.target === TARGET)) throw new Error("Apertium English → Spanish (apertium-eng-spa) is not installed");
  const nats = await startNatsServer();
  const dir = await tempDir("voiceloc-voice-stream-bench-");
  const loadBefore = load();
  try {
    const video = await makeVideo(stack, dir.path);
    const bus = await createNatsBus({ url: nats.url, logger: stack.logger, name: "voice-stream-bench" });
    const captured = captureLogger();
    const h = await startService({ ...stack, logger: captured.logger }, { mediaRoot: dir.path, bus });
    const typed = createCatalogBus(h.bus, BUS_CATALOG);

    /** Measured median pitch of the target language's voices, once per process (the service keeps its own the same way). */
    const voicePitch = new Map<string, number | null>();

    /** The same steps without the service. Returns the wall time and each step's. */
    async function byHand(run: number): Promise<{ ms: number; steps: [string, number][] }> {
      const work = join(dir.path, `hand-${run}`);
      await mkdir(work, { recursive: true });
      const steps: [string, number][] = [];
      const t0 = performance.now();
      let mark = t0;
      const step = (name: string) => {
        const now = performance.now();
        steps.push([name, now - mark]);
        mark = now;
      };
      // 1. The sound, decoded for the recogniser.
      const speech = await media.decodeAudio({ input: video.path, outPath: join(work, "speech.wav"), sampleRate: 16_000 });
      step("decode (ffmpeg)");
      // 2. Recognition, the lines joined as the service joins them.
      const transcript = await stt.transcribe({ path: speech.path, language: SOURCE });
      const merged = mergeSegments(
        transcript.segments.map((x) => ({ start: Math.max(0, x.start), end: Math.max(x.start, x.end), text: x.text.trim() })).filter((x) => x.text !== "" && x.start < speech.durationSeconds),
      );
      step("recognise (pocketsphinx)");
      // 3. Where each line starts and who speaks it.
      const audio = await readPcm16Wav(speech.path);
      if (audio === undefined) throw new Error("the decoded sound is not a WAV");
      const refined = refineStarts(merged, detectSpeech(audio.samples, audio.sampleRate));
      const features = refined.map((l) => lineFeatures(audio.samples, audio.sampleRate, l.start, l.end));
      const labels = clusterSpeakers(features);
      const pitches = speakerPitches(labels, features);
      const segments = refined.map((l, i) => ({ ...l, speaker: labels[i] ?? 0 }));
      step("speakers (features, clustering)");
      // 4. Translation: every line in one Apertium call.
      const texts = await translateSegments(mt, { texts: segments.map((x) => x.text), source: SOURCE, target: TARGET, batchChars: 2_000 });
      step("translate (apertium)");
      // 5. A voice per speaker, nearest their pitch.
      const sample = texts.find((t) => t.trim().length >= 12) ?? texts[0] ?? "Hola.";
      const candidates = tts
        .capabilities()
        .voices.filter((v) => v.language === TARGET)
        .sort((a, b) => b.quality - a.quality)
        .filter((v, i, all) => all.findIndex((w) => w.name === v.name) === i)
        .slice(0, VOICE_CANDIDATES);
      for (const v of candidates) {
        if (voicePitch.has(v.name)) continue;
        const { engine, voice } = tts.resolve(TARGET, v.name);
        const out = await engine.synthesize({ text: sample.slice(0, 200), language: voice.language, voice: voice.name, outPath: join(work, "voice.wav") });
        voicePitch.set(v.name, (await measurePitch(out.wavPath)).medianHz);
      }
      const measured = candidates.map((v) => ({ name: v.name, medianHz: voicePitch.get(v.name) ?? null })).filter((v) => v.medianHz !== null);
      const voices = pitches.length > 1 && measured.length > 0 ? assignVoices(pitches, measured) : [tts.resolve(TARGET).voice.name];
      step("voices (pitch per voice, once)");
      // 6. Each line spoken by its engine, straight to WAV.
      const clips: { segment: number; path: string; seconds: number }[] = [];
      for (const [index, text] of texts.entries()) {
        if (text.trim() === "") continue;
        const { engine, voice } = tts.resolve(TARGET, voices[segments[index]?.speaker ?? 0] ?? voices[0]);
        const out = await engine.synthesize({ text, language: voice.language, voice: voice.name, outPath: join(work, `line-${index}.wav`) });
        clips.push({ segment: index, path: out.wavPath, seconds: await media.encodedAudioDuration(out.wavPath, "wav") });
      }
      step("speak (tts per line)");
      // 7. The same timing fit.
      const placed: { path: string; startSeconds: number; durationSeconds: number }[] = [];
      for (const clip of clips) {
        const segment = segments[clip.segment];
        if (segment === undefined) continue;
        const slot = fitClip(segment.start, segments[clip.segment + 1]?.start ?? speech.durationSeconds, clip.seconds);
        let path = clip.path;
        let durationSeconds = clip.seconds;
        if (slot.tempo > 1 || slot.cutSeconds !== undefined) {
          const filters: string[] = [];
          if (slot.tempo > 1) filters.push(`atempo=${slot.tempo}`);
          if (slot.cutSeconds !== undefined) {
            const cut = slot.cutSeconds;
            filters.push(`atrim=duration=${cut}`, `afade=t=out:st=${Math.max(0, cut - DEFAULT_FADE_SECONDS).toFixed(3)}:d=${Math.min(DEFAULT_FADE_SECONDS, cut).toFixed(3)}`);
          }
          path = join(work, `line-${clip.segment}-fitted.wav`);
          await media.run([...GLOBAL_ARGS, ...inputArgs(clip.path, WAV_DEMUXERS), "-af", filters.join(","), ...audioEncodeArgs("wav", { channels: 1 }), "-y", path]);
          durationSeconds = await media.encodedAudioDuration(path, "wav");
        }
        placed.push({ path, startSeconds: slot.startSeconds, durationSeconds });
      }
      step("fit (ffmpeg atempo/cut)");
      // 8. The speech on one track, then the one run that ducks the original, mixes and muxes.
      const track = join(work, "speech-track.wav");
      await media.placeClips({ clips: placed, durationSeconds: speech.durationSeconds, outPath: track, format: "wav", sampleRate: DUB_SAMPLE_RATE, encode: { channels: 1 } });
      await media.run(
        buildDubbedVideoArgs({
          original: video.path,
          speech: track,
          output: join(work, "dubbed.mp4"),
          durationSeconds: speech.durationSeconds,
          mode: "duck",
          lines: placed.map((c) => ({ start: c.startSeconds, end: c.startSeconds + c.durationSeconds })),
          originalHasAudio: true,
          channels: 1,
          container: "mp4",
          targetLanguage: ISO_639_2_CODES[TARGET],
          sourceLanguage: ISO_639_2_CODES[SOURCE],
          encodeOriginalAudio: false,
          maxSeconds: SECONDS + 1,
        }),
      );
      step("place + mux (ffmpeg)");
      const ms = performance.now() - t0;
      await rm(work, { recursive: true, force: true });
      return { ms, steps };
    }

    /** The service: from publishing the work message to its completed event. */
    async function service(): Promise<{ ms: number; stages: [string, number][]; end: TaskEvent }> {
      const id = randomUUID();
      const work: VoiceStreamWork = {
        kind: "voice-stream",
        task_id: id,
        account_id: "alice",
        file: "talk.mp4",
        source_language: SOURCE,
        target_language: TARGET,
        voice: null,
        original_audio: "duck",
        speakers: "auto",
      };
      const from = Date.now();
      const t0 = performance.now();
      await typed.publishWork("voice-stream", work);
      const end = await h.finished(id, 900_000);
      const ms = performance.now() - t0;
      if (end.status !== "completed") throw new Error(`the benchmark task failed: ${end.error ?? "no reason"}`);
      return { ms, stages: stageTimes(captured.lines, from, from + ms), end };
    }

    write(`voice stream benchmark: ${SECONDS} s video (640x360 H.264 + AAC), ${video.lines} lines by two speakers over a noise bed, ${SOURCE} → ${TARGET}, original_audio duck, speakers auto`);
    write(`machine: ${cpus().length} cores, load average ${loadBefore} at the start`);
    const hand: number[] = [];
    const svc: number[] = [];
    for (let run = 1; run <= RUNS; run++) {
      const a = await byHand(run);
      hand.push(a.ms);
      write(`run ${run}  by hand ${s(a.ms)}   (${a.steps.map(([n, ms]) => `${n} ${s(ms)}`).join(", ")})   load ${load()}`);
      const b = await service();
      svc.push(b.ms);
      write(`run ${run}  service ${s(b.ms)}   ratio ${(b.ms / a.ms).toFixed(3)}   (${b.stages.map(([n, ms]) => `${n} ${s(ms)}`).join(", ")})   timing ${JSON.stringify(b.end.timing ?? null)}   load ${load()}`);
    }
    const bestHand = Math.min(...hand);
    const bestService = Math.min(...svc);
    write(`best of ${RUNS}: by hand ${s(bestHand)}   service ${s(bestService)}   ratio ${(bestService / bestHand).toFixed(3)} (target ≤ ${TARGET_RATIO}; per run ${svc.map((v, i) => (v / (hand[i] ?? v)).toFixed(3)).join(", ")}: the load moves between legs)   load ${load()}`);
    await h.cleanup();
  } finally {
    await dir.cleanup();
    await nats.stop();
  }
}

await main();
