/**
 * The live progress line of the CLI: bar, percent, stage, elapsed time and an estimate of the time
 * left. Drawn (on stderr) only when stdout is a terminal; otherwise nothing at all.
 */
import cliProgress from "cli-progress";

export interface ProgressView {
  stage(stage: string, percent?: number): void;
  stop(): void;
}

export function formatDuration(ms: number): string {
  const total = Math.max(0, Math.round(ms / 1000));
  const h = Math.floor(total / 3600);
  const m = Math.floor((total % 3600) / 60);
  const s = total % 60;
  const mm = String(m).padStart(h > 0 ? 2 : 1, "0");
  return `${h > 0 ? `${h}:` : ""}${mm}:${String(s).padStart(2, "0")}`;
}

/** Time left from the progress made since the task started moving (percent > 0), or undefined. */
export function estimateRemainingMs(percent: number, sinceFirstProgressMs: number, percentAtFirst: number): number | undefined {
  const made = percent - percentAtFirst;
  if (percent >= 100) return 0;
  if (made <= 0 || sinceFirstProgressMs <= 0) return undefined;
  return (sinceFirstProgressMs / made) * (100 - percent);
}

const silent: ProgressView = { stage: () => undefined, stop: () => undefined };

export function progressView(enabled: boolean, stream: NodeJS.WriteStream, now: () => number = Date.now): ProgressView {
  if (!enabled) return silent;
  const started = now();
  let first: { at: number; percent: number } | undefined;
  let stageName = "starting";
  let percent = 0;
  const bar = new cliProgress.SingleBar({
    stream,
    hideCursor: true,
    clearOnComplete: false,
    stopOnComplete: false,
    barsize: 24,
    fps: 5,
    etaBuffer: 1,
    format: (options, params) => {
      const size = options.barsize ?? 24;
      const filled = Math.round(params.progress * size);
      const elapsed = formatDuration(now() - started);
      const eta = first ? estimateRemainingMs(percent, now() - first.at, first.percent) : undefined;
      return `${"█".repeat(filled)}${"░".repeat(size - filled)} ${String(Math.round(percent)).padStart(3)}% | ${stageName.padEnd(11)} | elapsed ${elapsed} | ETA ${eta === undefined ? "--:--" : formatDuration(eta)}`;
    },
  });
  bar.start(100, 0);
  return {
    stage: (name, value) => {
      stageName = name;
      if (value !== undefined) {
        percent = Math.max(percent, value);
        if (!first && name === "processing") first = { at: now(), percent };
      }
      bar.update(percent);
    },
    stop: () => {
      bar.update(percent);
      bar.stop();
    },
  };
}
