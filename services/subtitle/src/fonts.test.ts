/**
 * The burn-in font of every language draws its script: libass renders a line of each language with
 * the chosen font and reports no glyph it had to look for elsewhere (a missing glyph is a box).
 */
import { join } from "node:path";
import type { Language } from "@voiceloc/contracts";
import type { MediaToolkit } from "@voiceloc/media";
import { makeTestVideo, tempDir } from "@voiceloc/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SUBTITLE_FONTS } from "./languages.ts";
import { createStack, missingGlyphs } from "./testing/harness.ts";

const SAMPLES: Record<Language, string> = {
  French: "Le café est très bon aujourd'hui, n'est-ce pas ? Où êtes-vous ?",
  English: "The weather is very nice today, isn't it?",
  Amharic: "ዛሬ የአየር ሁኔታው በጣም ጥሩ ነው።",
  Swahili: "Hali ya hewa ni nzuri sana leo.",
  Chinese: "今天天气很好，我想喝一杯热咖啡。",
  Japanese: "今日はとても良い天気です。コーヒーをください。",
  Korean: "오늘 날씨가 정말 좋네요. 커피 한 잔 주세요.",
  German: "Das Wetter ist heute sehr schön. Größe und Übermut.",
  Russian: "Сегодня очень хорошая погода, не правда ли?",
  Portuguese: "O tempo está ótimo hoje, não é? Ação e coração.",
  Spanish: "¿Qué tiempo hace hoy? ¡Mañana será mejor!",
  Italian: "Il tempo è molto bello oggi. Perché no?",
  Arabic: "الطقس جميل جدا اليوم، أليس كذلك؟",
  Dutch: "Het weer is vandaag erg mooi. Één kopje koffie.",
  Hindi: "आज मौसम बहुत अच्छा है।",
  Urdu: "آج موسم بہت اچھا ہے۔ کیا آپ چائے پئیں گے؟",
};

let media: MediaToolkit;
let dir: { path: string; cleanup: () => Promise<void> };
let video: string;

beforeAll(async () => {
  media = (await createStack()).media;
  dir = await tempDir("voiceloc-subtitle-fonts-");
  video = await makeTestVideo(1, join(dir.path, "frame.mp4"), { size: "320x240" });
});

afterAll(async () => {
  await dir?.cleanup();
});

describe("burn-in fonts", () => {
  it.each(Object.entries(SAMPLES) as [Language, string][])("%s is drawn with its own font, no glyph missing", async (language, text) => {
    expect(await missingGlyphs(media, dir.path, video, text, SUBTITLE_FONTS[language])).toEqual([]);
  });

  it("the check catches a font without the script: Noto Sans lacks Urdu's U+06C1", async () => {
    expect(await missingGlyphs(media, dir.path, video, SAMPLES.Urdu, "Noto Sans")).toContain("0X6C1");
  });
});
