import { describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "./index.ts";

describe("OpenAI-compatible services per capability", () => {
  it("each capability falls back to OPENAI_BASE_URL", () => {
    const config = loadConfig({ OPENAI_BASE_URL: "http://shared:8000", OPENAI_MT_MODEL: "m" });
    expect(config.openaiTts?.baseUrl).toBe("http://shared:8000");
    expect(config.openaiStt?.baseUrl).toBe("http://shared:8000");
    expect(config.openaiMt?.baseUrl).toBe("http://shared:8000");
  });

  it("each capability can have its own address or be switched off on its own", () => {
    const config = loadConfig({
      OPENAI_BASE_URL: "http://shared:8000",
      OPENAI_TTS_BASE_URL: "off",
      OPENAI_STT_BASE_URL: "http://whisper:9000",
      OPENAI_MT_MODEL: "m",
    });
    expect(config.openaiTts).toBeUndefined();
    expect(config.openaiStt?.baseUrl).toBe("http://whisper:9000");
    expect(config.openaiMt?.baseUrl).toBe("http://shared:8000");
    const onlySpeech = loadConfig({ OPENAI_TTS_BASE_URL: "http://tts:8880" });
    expect(onlySpeech.openaiTts?.baseUrl).toBe("http://tts:8880");
    expect(onlySpeech.openaiStt).toBeUndefined();
    expect(onlySpeech.openaiMt).toBeUndefined();
  });

  it("refuses an address that is neither a URL nor off, naming the variable", () => {
    expect(() => loadConfig({ OPENAI_MT_BASE_URL: "ftp://x" })).toThrow(ConfigError);
    expect(() => loadConfig({ OPENAI_MT_BASE_URL: "ftp://x" })).toThrow(/OPENAI_MT_BASE_URL/);
  });
});

describe("OPENAI_TTS_LANGUAGES", () => {
  it("limits the speech server's voices to the languages given; unset, it names none (every language)", () => {
    expect(loadConfig({ OPENAI_TTS_BASE_URL: "http://kokoro:8880/v1", OPENAI_TTS_LANGUAGES: "English, es" }).openaiTts?.languages).toEqual(["English", "es"]);
    expect(loadConfig({ OPENAI_TTS_BASE_URL: "http://kokoro:8880/v1" }).openaiTts).not.toHaveProperty("languages");
    expect(loadConfig({ OPENAI_TTS_BASE_URL: "http://kokoro:8880/v1", OPENAI_TTS_LANGUAGES: "" }).openaiTts).not.toHaveProperty("languages");
  });

  it("refuses what is not a list of language names or codes, naming the variable", () => {
    expect(() => loadConfig({ OPENAI_TTS_LANGUAGES: "en;es" })).toThrow(/OPENAI_TTS_LANGUAGES/);
  });
});
