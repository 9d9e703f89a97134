/**
 * A local stand-in for a LibreTranslate server, speaking its documented API: `GET /languages`
 * (`[{ code, name, targets }]`), `POST /translate` with `{ q, source, target, format, api_key }`
 * (`q` a string or an array; `translatedText` answers in the same shape), errors as
 * `{ "error": "…" }`: 400 for a missing field or a language it does not have, 403 for a wrong API
 * key. Its "translation" is `[<target>] <TEXT IN CAPITALS>`, so a test sees which text went where.
 */
import { sendJson, startEngineStandIn, type EngineStandIn } from "./stand-in-server.ts";

export type LibreTranslateRoute = "languages" | "translate";

export interface LibreTranslateStandInOptions {
  /** Language codes it has (every pair among them). Default en, es, fr, de. */
  languages?: readonly string[];
  /** When set, `api_key` must equal it. */
  apiKey?: string;
  /** Largest `q` array (the server's --batch-limit); more is a 400. Default unlimited. */
  batchLimit?: number;
}

/** What the stand-in answers for `text` translated into `target`. */
export function libreTranslateStandInText(text: string, target: string): string {
  return `[${target}] ${text.toUpperCase()}`;
}

export async function startLibreTranslateStandIn(options: LibreTranslateStandInOptions = {}): Promise<EngineStandIn<LibreTranslateRoute>> {
  const codes = options.languages ?? ["en", "es", "fr", "de"];
  return startEngineStandIn<LibreTranslateRoute>(
    (req) => (req.path === "/languages" ? "languages" : req.path === "/translate" ? "translate" : undefined),
    (req, res) => {
      if (req.path === "/languages" && req.method === "GET") {
        return sendJson(res, 200, codes.map((code) => ({ code, name: code, targets: codes })));
      }
      if (req.path !== "/translate" || req.method !== "POST") return sendJson(res, 404, { error: "Not Found" });
      const body = (typeof req.json === "object" && req.json !== null ? req.json : {}) as Record<string, unknown>;
      if (options.apiKey !== undefined && body.api_key !== options.apiKey) {
        return sendJson(res, 403, { error: "Invalid API key" });
      }
      const { q, source, target } = body;
      if (q === undefined) return sendJson(res, 400, { error: "Invalid request: missing q parameter" });
      if (typeof source !== "string") return sendJson(res, 400, { error: "Invalid request: missing source parameter" });
      if (typeof target !== "string") return sendJson(res, 400, { error: "Invalid request: missing target parameter" });
      if (!codes.includes(source)) return sendJson(res, 400, { error: `${source} is not supported` });
      if (!codes.includes(target)) return sendJson(res, 400, { error: `${target} is not supported` });
      if (Array.isArray(q)) {
        if (options.batchLimit !== undefined && q.length > options.batchLimit) {
          return sendJson(res, 400, { error: `Invalid request: request (${q.length}) exceeds text limit (${options.batchLimit})` });
        }
        return sendJson(res, 200, { translatedText: q.map((t) => libreTranslateStandInText(String(t), target)) });
      }
      return sendJson(res, 200, { translatedText: libreTranslateStandInText(String(q), target) });
    },
  );
}
