/**
 * A local stand-in for the DeepL API (v2), speaking its documented protocol: every request needs
 * `Authorization: DeepL-Auth-Key <key>` (else 403); `GET /v2/languages?type=source|target` lists
 * `[{ language, name, supports_formality }]` (source codes bare, `EN`; targets with their variants,
 * `EN-US`, `EN-GB`, `PT-BR`, `PT-PT`, `ZH-HANS`); `POST /v2/translate` takes JSON
 * `{ text: [...], source_lang?, target_lang }` and answers `{ translations: [{ detected_source_language,
 * text }] }` in the same order. Refusals come as `{ "message": "…" }`: 400 for a missing or
 * unsupported parameter (a language it does not have, more than 50 texts), 413 for a body over
 * 128 KiB (an HTML page, as DeepL's front server sends), 456 when the character quota is used up.
 * `fail()` adds 429 with Retry-After, 5xx, hangs and malformed answers. Its "translation" is
 * `[<TARGET_LANG>] <TEXT IN CAPITALS>`, so a test sees which text went where in which variant.
 */
import { sendJson, startEngineStandIn, type EngineStandIn } from "./stand-in-server.ts";

export type DeepLRoute = "languages" | "translate";

export interface DeepLStandInOptions {
  /** The key every request must carry. */
  apiKey: string;
  /** Source language codes. Default EN, DE, FR, ES, PT, IT, NL, JA, KO, ZH, RU, AR. */
  sourceLanguages?: readonly string[];
  /** Target language codes. Default the sources, with EN-GB/EN-US, PT-BR/PT-PT and ZH-HANS/ZH-HANT in place of EN, PT and ZH. */
  targetLanguages?: readonly string[];
  /** Characters it translates for the key before answering 456. Default unlimited. */
  characterLimit?: number;
}

export interface DeepLStandIn extends EngineStandIn<DeepLRoute> {
  /** Characters translated so far (what DeepL bills). */
  readonly characterCount: number;
}

/** DeepL's documented limits of one translate request. */
export const DEEPL_STAND_IN_MAX_TEXTS = 50;
export const DEEPL_STAND_IN_MAX_BODY_BYTES = 128 * 1024;

const DEFAULT_SOURCES = ["EN", "DE", "FR", "ES", "PT", "IT", "NL", "JA", "KO", "ZH", "RU", "AR"];
const VARIANTS: Record<string, string[]> = { EN: ["EN-GB", "EN-US"], PT: ["PT-BR", "PT-PT"], ZH: ["ZH-HANS", "ZH-HANT"] };

/** What the stand-in answers for `text` translated into `targetLang` (as the request spelled it, upper case). */
export function deeplStandInText(text: string, targetLang: string): string {
  return `[${targetLang.toUpperCase()}] ${text.toUpperCase()}`;
}

export async function startDeepLStandIn(options: DeepLStandInOptions): Promise<DeepLStandIn> {
  const sources = (options.sourceLanguages ?? DEFAULT_SOURCES).map((c) => c.toUpperCase());
  const targets = (options.targetLanguages ?? sources.flatMap((c) => VARIANTS[c] ?? [c])).map((c) => c.toUpperCase());
  let characterCount = 0;
  const stand = await startEngineStandIn<DeepLRoute>(
    (req) => (req.path === "/v2/languages" ? "languages" : req.path === "/v2/translate" ? "translate" : undefined),
    (req, res) => {
      if (req.headers.authorization !== `DeepL-Auth-Key ${options.apiKey}`) return sendJson(res, 403, { message: "Authorization failure, check auth_key" });
      if (req.path === "/v2/languages" && req.method === "GET") {
        const type = req.query.get("type") ?? "source";
        if (type !== "source" && type !== "target") return sendJson(res, 400, { message: "Parameter 'type' is invalid. 'source' and 'target' are valid values." });
        const list = type === "source" ? sources : targets;
        return sendJson(res, 200, list.map((language) => ({ language, name: language, ...(type === "target" ? { supports_formality: false } : {}) })));
      }
      if (req.path !== "/v2/translate" || req.method !== "POST") return sendJson(res, 404, "");
      if (req.bodyBytes > DEEPL_STAND_IN_MAX_BODY_BYTES) {
        return sendJson(res, 413, "<html>\n<head><title>413 Request Entity Too Large</title></head>\n<body>\n<center><h1>413 Request Entity Too Large</h1></center>\n</body>\n</html>\n", {
          "content-type": "text/html",
        });
      }
      const body = (typeof req.json === "object" && req.json !== null ? req.json : {}) as Record<string, unknown>;
      const text = body.text;
      if (!Array.isArray(text) || text.length === 0 || !text.every((t): t is string => typeof t === "string")) return sendJson(res, 400, { message: "Parameter 'text' not specified." });
      if (text.length > DEEPL_STAND_IN_MAX_TEXTS) return sendJson(res, 400, { message: `Too many texts: at most ${DEEPL_STAND_IN_MAX_TEXTS} per request.` });
      const targetLang = typeof body.target_lang === "string" ? body.target_lang.toUpperCase() : undefined;
      if (targetLang === undefined) return sendJson(res, 400, { message: "Parameter 'target_lang' not specified." });
      if (!targets.includes(targetLang)) return sendJson(res, 400, { message: "Value for 'target_lang' not supported." });
      const sourceLang = typeof body.source_lang === "string" ? body.source_lang.toUpperCase() : undefined;
      if (sourceLang !== undefined && !sources.includes(sourceLang)) return sendJson(res, 400, { message: "Value for 'source_lang' not supported." });
      const characters = text.reduce((n, t) => n + t.length, 0);
      if (options.characterLimit !== undefined && characterCount + characters > options.characterLimit) {
        return sendJson(res, 456, { message: "Quota Exceeded" });
      }
      characterCount += characters;
      return sendJson(res, 200, { translations: text.map((t) => ({ detected_source_language: sourceLang ?? "EN", text: deeplStandInText(t, targetLang) })) });
    },
  );
  return Object.assign(stand, {
    get characterCount() {
      return characterCount;
    },
  });
}
