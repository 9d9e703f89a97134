import { createLogger, silentLogger } from "@voiceloc/log";
import { beforeAll, describe, expect, it } from "vitest";
import { apertiumRoutes, createApertiumEngine, parseApertiumModes } from "./apertium.ts";
import { MtEngineUnavailableError, TranslationError, TranslationNotSupportedError } from "./errors.ts";
import { createMtRegistry } from "./registry.ts";
import type { MtEngine } from "./types.ts";

const logger = silentLogger();
const ARABIC_SCRIPT = /[\u0600-\u06FF]/u;
const DEVANAGARI = /[\u0900-\u097F]/u;

let apertium: MtEngine;

beforeAll(async () => {
  apertium = await createApertiumEngine({ logger });
});

describe("Apertium mode detection", () => {
  it("reads pair modes and ignores other names", () => {
    const modes = parseApertiumModes(["eng-spa", "spa-eng_US", "es-pt_BR", "eco-es-fr", "hin-urd.mode", "eng-spa-tagger", "xx-yy", "es-fr"]);
    expect(modes.map((m) => m.mode)).toEqual(["eng-spa", "spa-eng_US", "es-pt_BR", "hin-urd", "es-fr"]);
    expect(modes[1]).toMatchObject({ source: "Spanish", target: "English", variant: "US" });
  });

  it("prefers modes without a regional variant and pivots through Spanish", () => {
    const routes = apertiumRoutes(parseApertiumModes(["spa-eng_US", "spa-eng", "eng-spa", "es-pt_BR", "es-fr", "fr-es"]));
    expect(routes.find((r) => r.source === "Spanish" && r.target === "English")?.modes).toEqual(["spa-eng"]);
    expect(routes.find((r) => r.source === "Spanish" && r.target === "Portuguese")?.modes).toEqual(["es-pt_BR"]);
    expect(routes.find((r) => r.source === "English" && r.target === "French")).toEqual({ source: "English", target: "French", modes: ["eng-spa", "es-fr"], pivot: "Spanish" });
    // no Portuguese → Spanish mode, so no pivot from Portuguese
    expect(routes.some((r) => r.source === "Portuguese")).toBe(false);
  });

  it("lists the installed direct pairs and the pivots through Spanish", () => {
    const pairs = apertium.capabilities().pairs;
    const direct = pairs.filter((p) => p.pivot === undefined).map((p) => `${p.source}>${p.target}`);
    expect(direct).toEqual(
      expect.arrayContaining([
        "English>Spanish",
        "Spanish>English",
        "French>Spanish",
        "Spanish>French",
        "Spanish>Portuguese",
        "Portuguese>Spanish",
        "Spanish>Italian",
        "Italian>Spanish",
        "Hindi>Urdu",
        "Urdu>Hindi",
      ]),
    );
    for (const [source, target] of [
      ["English", "French"],
      ["French", "English"],
      ["English", "Portuguese"],
      ["Portuguese", "English"],
      ["English", "Italian"],
      ["Italian", "English"],
      ["French", "Portuguese"],
      ["Portuguese", "Italian"],
      ["Italian", "French"],
    ]) {
      expect(pairs).toContainEqual({ source, target, pivot: "Spanish", quality: "rule-based" });
    }
    expect(pairs.every((p) => p.quality === "rule-based")).toBe(true);
    expect(pairs.some((p) => p.source === "English" && p.target === "German")).toBe(false);
    expect(pairs.some((p) => (p.source === "Hindi" || p.source === "Urdu") && p.pivot !== undefined)).toBe(false);
  });

  it("reports a missing program as unavailable", async () => {
    await expect(createApertiumEngine({ logger, binary: "/nonexistent/apertium" })).rejects.toBeInstanceOf(MtEngineUnavailableError);
  });
});

describe("Apertium translation", () => {
  it("translates English to Spanish and back", async () => {
    const spanish = await apertium.translate({ text: "The house is red.", source: "English", target: "Spanish" });
    expect(spanish.toLowerCase()).toContain("casa");
    const english = await apertium.translate({ text: "La casa es roja.", source: "Spanish", target: "English" });
    expect(english.toLowerCase()).toContain("house");
  });

  it("translates French to Spanish", async () => {
    const spanish = await apertium.translate({ text: "La maison est rouge et le chien est grand.", source: "French", target: "Spanish" });
    expect(spanish.toLowerCase()).toContain("casa");
    expect(spanish.toLowerCase()).toContain("perro");
  });

  it("translates English to French through Spanish", async () => {
    const french = await apertium.translate({ text: "The house is red and the dog is big.", source: "English", target: "French" });
    expect(french.toLowerCase()).toContain("maison");
    expect(french.toLowerCase()).toContain("chien");
  });

  it("translates English to Italian and Portuguese through Spanish", async () => {
    const italian = await apertium.translate({ text: "The book is on the table.", source: "English", target: "Italian" });
    expect(italian.toLowerCase()).toContain("libro");
    const portuguese = await apertium.translate({ text: "The book is on the table.", source: "English", target: "Portuguese" });
    expect(portuguese.toLowerCase()).toContain("livro");
  });

  it("converts Hindi to Urdu script and back", async () => {
    const urdu = await apertium.translate({ text: "यह घर लाल है।", source: "Hindi", target: "Urdu" });
    expect(urdu).toMatch(ARABIC_SCRIPT);
    expect(urdu).not.toMatch(DEVANAGARI);
    const hindi = await apertium.translate({ text: "یہ گھر لال ہے۔", source: "Urdu", target: "Hindi" });
    expect(hindi).toMatch(DEVANAGARI);
    expect(hindi).not.toMatch(ARABIC_SCRIPT);
  });

  it("lets characters Apertium uses for formatting through", async () => {
    const text = "The house [is] red: ^price$ 5/10, C:\\path\\file <b>big</b> me@example.org *star #tag.";
    for (const target of ["Spanish", "French"] as const) {
      const out = await apertium.translate({ text, source: "English", target });
      for (const c of ["[", "]", "^", "$", "/", "\\", "<", ">", "@", "*", "#"]) expect(out, `${c} in ${out}`).toContain(c);
      expect(out).toContain("me@example.org");
      expect(out).toContain("C:\\");
      expect(out.split("\\")).toHaveLength(3);
    }
    const lone = await apertium.translate({ text: "A lone [ bracket and a trailing backslash \\", source: "English", target: "Spanish" });
    expect(lone).toContain("[");
    expect(lone.endsWith("\\")).toBe(true);
  });

  it("keeps paragraph breaks and surrounding whitespace", async () => {
    const out = await apertium.translate({ text: "\nChapter One\n\nThe house is red.\n\n\nIt is big.\n", source: "English", target: "Spanish" });
    expect(out.startsWith("\n")).toBe(true);
    expect(out.endsWith("\n")).toBe(true);
    const paragraphs = out.trim().split(/\n{2,}/);
    expect(paragraphs).toHaveLength(3);
    expect(out.trim().split("\n\n\n")).toHaveLength(2);
    expect(paragraphs[1]?.toLowerCase()).toContain("casa");
    for (const p of paragraphs) expect(p).toBe(p.trim());
    const french = await apertium.translate({ text: "The house is red. It is big.\n\n\"Hello,\" she said.\nThe end.", source: "English", target: "French" });
    expect(french).not.toMatch(/ {2}|\n /);
    expect(french.split("\n\n")).toHaveLength(2);
    expect(french.split("\n")).toHaveLength(4);
  });

  it("translates a long text in chunks, in order, keeping paragraph breaks", async () => {
    const sentences = [
      "The old house near the river is red.",
      "Every morning the dog runs in the garden.",
      "My sister reads a book on the table.",
      "The children play with the ball in the street.",
    ];
    const paragraphs = Array.from({ length: 24 }, (_, i) => `Paragraph ${i + 1}. ${sentences.join(" ")} ${sentences.slice(0, (i % 4) + 1).join(" ")}`);
    // one paragraph longer than a chunk, which must be split between sentences
    paragraphs.splice(10, 0, `Paragraph long. ${Array.from({ length: 12 }, () => sentences.join(" ")).join(" ")}`);
    const text = paragraphs.join("\n\n");
    expect(text.length).toBeGreaterThan(5000);

    const lines: string[] = [];
    const debugLogger = createLogger({ level: "debug", destination: { write: (line: string) => void lines.push(line) } });
    const engine = await createApertiumEngine({ logger: debugLogger, maxChunkChars: 800 });
    const out = await engine.translate({ text, source: "English", target: "Spanish" });

    const chunkLogs = lines.map((l) => JSON.parse(l) as { msg: string; chars?: number }).filter((l) => l.msg === "translated chunk");
    expect(chunkLogs.length).toBeGreaterThanOrEqual(Math.ceil(text.length / 800));
    for (const log of chunkLogs) expect(log.chars).toBeLessThanOrEqual(800);

    const translated = out.split("\n\n");
    expect(translated).toHaveLength(paragraphs.length);
    const numbers = translated.map((p) => /\b(\d+)\b/.exec(p)?.[1]).filter((n) => n !== undefined);
    expect(numbers).toEqual(Array.from({ length: 24 }, (_, i) => String(i + 1)));
    for (const p of translated) {
      expect(p.trim()).not.toBe("");
      expect(p.toLowerCase()).toContain("casa");
      expect(p.toLowerCase()).toContain("perro");
    }
    expect(translated[10]?.length).toBeGreaterThan(2000);
  });

  it("refuses a pair no installed mode covers", async () => {
    const error = await apertium.translate({ text: "The house is red.", source: "English", target: "German" }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TranslationNotSupportedError);
    expect((error as TranslationNotSupportedError).message).toContain("English");
    expect((error as TranslationNotSupportedError).message).toContain("German");
  });

  it("stops when the signal is aborted", async () => {
    const controller = new AbortController();
    controller.abort();
    const error = await apertium.translate({ text: "The house is red.", source: "English", target: "Spanish", signal: controller.signal }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TranslationError);
    expect((error as TranslationError).code).toBe("TRANSLATION_CANCELLED");
  });
});

describe("MT registry with Apertium only", () => {
  it("refuses English to German with a typed error naming both languages", async () => {
    const registry = createMtRegistry([apertium]);
    expect(registry.supports("English", "German")).toBe(false);
    expect(registry.supports("English", "French")).toBe(true);
    const error = await registry.translate({ text: "The house is red.", source: "English", target: "German" }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TranslationNotSupportedError);
    expect(error).toMatchObject({ name: "TranslationNotSupportedError", code: "TRANSLATION_NOT_SUPPORTED", source: "English", target: "German" });
    expect((error as Error).message).toBe("Translation from English to German is not available: no installed translation engine covers this pair.");
  });

  it("returns the text unchanged when source and target are the same", async () => {
    const registry = createMtRegistry([apertium]);
    const text = "  The house is red.\n\n[kept] exactly ";
    await expect(registry.translate({ text, source: "English", target: "English" })).resolves.toBe(text);
    await expect(registry.translate({ text, source: "German", target: "German" })).resolves.toBe(text);
    expect(registry.supports("German", "German")).toBe(true);
  });

  it("shows the pivot pairs in the table with the engine", () => {
    const registry = createMtRegistry([apertium]);
    expect(registry.capabilities().pairs).toContainEqual(expect.objectContaining({ source: "English", target: "French", pivot: "Spanish", quality: "rule-based", engine: "apertium" }));
    expect(registry.capabilities().pairs).toContainEqual(expect.objectContaining({ source: "Hindi", target: "Urdu", quality: "rule-based", engine: "apertium" }));
  });
});
