/**
 * A local stand-in for an OpenAI-compatible server as a voice stream uses it, speaking the documented
 * API: `POST /v1/audio/transcriptions` (multipart, `response_format=verbose_json`: the known lines of
 * the test's generated recording as timed segments, so a test is about timing and voices rather than
 * recognition) and `POST /v1/chat/completions` (a system prompt and the text as the user message;
 * `choices[0].message.content` answers). Every chat request's length budget (the prompt's "within N
 * characters") is recorded. Its "Spanish" is a fixed sentence as long as the source text times
 * `expansion`; with `budget: "honour"` a rendering longer than the budget is cut at a word to fit it,
 * with `"ignore"` the full rendering comes back whatever the prompt asks.
 */
import { sendJson, startEngineStandIn, type EngineStandIn } from "./stand-in-server.ts";

export type OpenAiDubbingRoute = "transcriptions" | "chat";

export interface DubbingScript {
  /** Length of the recording, seconds. */
  duration: number;
  /** What was said, and when (seconds). */
  segments: Array<{ start: number; end: number; text: string }>;
}

export interface DubbingPrompt {
  /** The user message: the text to translate. */
  text: string;
  /** The length budget the system prompt asks for, if any. */
  maxChars: number | undefined;
  /** What the stand-in answered. */
  answer: string;
}

export interface OpenAiDubbingStandIn extends EngineStandIn<OpenAiDubbingRoute> {
  /** What the recogniser answers (set before each task). */
  script: DubbingScript;
  /** Whether translations keep within the prompt's budget. */
  budget: "honour" | "ignore";
  /** Length of a full rendering as a share of the source text's. Default 1.6. */
  expansion: number;
  /** Every translation request with a user message, in order. */
  prompts: DubbingPrompt[];
}

const WORDS = "el tiempo es muy agradable hoy y mañana será todavía mejor en las montañas junto al lago con los amigos de siempre".split(" ");

/** The stand-in's rendering of `text`: `expansion` times its length, cut at a word to `maxChars` when given. */
export function dubbingStandInText(text: string, expansion: number, maxChars?: number): string {
  const wanted = Math.max(4, Math.round(text.trim().length * expansion));
  const words: string[] = [];
  let length = 0;
  for (let i = 0; length < wanted; i++) {
    const word = WORDS[i % WORDS.length] ?? "y";
    words.push(word);
    length += word.length + 1;
  }
  if (maxChars !== undefined) {
    while (words.length > 1 && words.join(" ").length + 1 > maxChars) words.pop();
  }
  const sentence = words.join(" ");
  return `${sentence[0]?.toUpperCase() ?? ""}${sentence.slice(1)}.`;
}

export async function startOpenAiDubbingStandIn(): Promise<OpenAiDubbingStandIn> {
  // The test's handle: its fields are read at each request.
  const state: Omit<OpenAiDubbingStandIn, keyof EngineStandIn<OpenAiDubbingRoute>> = { script: { duration: 1, segments: [] }, budget: "honour", expansion: 1.6, prompts: [] };
  const server = await startEngineStandIn<OpenAiDubbingRoute>(
    (req) => (req.path === "/v1/audio/transcriptions" ? "transcriptions" : req.path === "/v1/chat/completions" ? "chat" : undefined),
    (req, res) => {
      if (req.method === "POST" && req.path === "/v1/audio/transcriptions") {
        const script = state.script;
        return sendJson(res, 200, {
          task: "transcribe",
          language: "english",
          duration: script.duration,
          text: script.segments.map((s) => s.text).join(" "),
          segments: script.segments.map((s, id) => ({ id, seek: 0, ...s, tokens: [1], temperature: 0, avg_logprob: -0.2, compression_ratio: 1.2, no_speech_prob: 0.01 })),
        });
      }
      if (req.method === "POST" && req.path === "/v1/chat/completions") {
        const body = (typeof req.json === "object" && req.json !== null ? req.json : {}) as { messages?: Array<{ role?: string; content?: unknown }> };
        const system = String(body.messages?.find((m) => m.role === "system")?.content ?? "");
        const text = String(body.messages?.find((m) => m.role === "user")?.content ?? "");
        const match = /within (\d+) characters/.exec(system);
        const maxChars = match?.[1] === undefined ? undefined : Number(match[1]);
        const answer = dubbingStandInText(text, state.expansion, state.budget === "honour" ? maxChars : undefined);
        state.prompts.push({ text, maxChars, answer });
        return sendJson(res, 200, {
          id: `chatcmpl-${state.prompts.length}`,
          object: "chat.completion",
          model: "stand-in",
          choices: [{ index: 0, message: { role: "assistant", content: answer }, finish_reason: "stop" }],
        });
      }
      return sendJson(res, 404, { error: { message: `Unknown request URL: ${req.method} ${req.path}`, type: "invalid_request_error", param: null, code: null } });
    },
  );
  return Object.assign(state, server);
}
