import { describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "./index.ts";

describe("speech engine settings", () => {
  it("PIPER_URL with voices per language, a speaker after ':'; off or unset is no Piper", () => {
    const config = loadConfig({ PIPER_URL: "http://piper:5000", PIPER_VOICES: " English=en_US-lessac-medium, es=es_ES-davefx-medium,English=en_US-libritts_r-medium:p3 " });
    expect(config.piper).toEqual({
      baseUrl: "http://piper:5000",
      voices: [
        { language: "English", voice: "en_US-lessac-medium" },
        { language: "es", voice: "es_ES-davefx-medium" },
        { language: "English", voice: "en_US-libritts_r-medium", speaker: "p3" },
      ],
    });
    expect(loadConfig({ PIPER_URL: "http://piper:5000" }).piper).toEqual({ baseUrl: "http://piper:5000", voices: undefined });
    expect(loadConfig({ PIPER_URL: "off" }).piper).toBeUndefined();
    expect(loadConfig({}).piper).toBeUndefined();
  });

  it("refuses malformed Piper settings, naming the variable", () => {
    expect(() => loadConfig({ PIPER_URL: "ftp://piper" })).toThrow(/PIPER_URL/);
    expect(() => loadConfig({ PIPER_URL: "http://piper:5000", PIPER_VOICES: "en_US-lessac-medium" })).toThrow(/PIPER_VOICES.*language=voice/s);
    expect(() => loadConfig({ PIPER_URL: "http://piper:5000", PIPER_VOICES: "English=../etc/passwd" })).toThrow(ConfigError);
    expect(() => loadConfig({ PIPER_VOICES: "English=en_US-lessac-medium" })).toThrow(/PIPER_VOICES names voices of a Piper server: set PIPER_URL/);
    expect(() => loadConfig({ PIPER_URL: "off", PIPER_VOICES: "English=en_US-lessac-medium" })).toThrow(/set PIPER_URL/);
  });

  it("OPENAI_TTS_VOICES unset leaves the voices to discovery; set, it is the list", () => {
    expect(loadConfig({ OPENAI_TTS_BASE_URL: "http://kokoro:8880" }).openaiTts?.voices).toBeUndefined();
    expect(loadConfig({ OPENAI_TTS_BASE_URL: "http://kokoro:8880", OPENAI_TTS_VOICES: " , " }).openaiTts?.voices).toBeUndefined();
    expect(loadConfig({ OPENAI_TTS_BASE_URL: "http://kokoro:8880", OPENAI_TTS_VOICES: "af_bella, am_adam" }).openaiTts?.voices).toEqual(["af_bella", "am_adam"]);
  });

  it("ENGINE_ORDER_TTS is a comma list of engine names", () => {
    expect(loadConfig({ ENGINE_ORDER_TTS: "piper, openai" }).engineOrder.tts).toEqual(["piper", "openai"]);
    expect(() => loadConfig({ ENGINE_ORDER_TTS: "piper;rm -rf" })).toThrow(/ENGINE_ORDER_TTS/);
  });
});
