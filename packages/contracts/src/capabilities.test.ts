import { describe, expect, it } from "vitest";
import type { Capabilities } from "./bus.ts";
import { capabilityProblems } from "./capabilities.ts";

const caps: Capabilities = {
  synthesis: { languages: ["English", "Spanish"] },
  recognition: { languages: ["English"] },
  translation: {
    pairs: [
      { source: "English", target: "Spanish", pivot: null, quality: "rule-based" },
      { source: "Spanish", target: "English", pivot: null, quality: "rule-based" },
    ],
  },
  cloning: { available: false, languages: [] },
  voices: [
    { name: "flite:slt", language: "English", engine: "flite", description: "", default: true },
    { name: "espeak:es", language: "Spanish", engine: "espeak", description: "", default: true },
  ],
};

describe("capabilityProblems", () => {
  it("accepts what the engines cover", () => {
    expect(capabilityProblems(caps, { kind: "audiobook", source: "English", target: "Spanish", voice: "espeak:es" })).toEqual([]);
    expect(capabilityProblems(caps, { kind: "voice-stream", source: "English", target: "English" })).toEqual([]);
    expect(capabilityProblems(caps, { kind: "subtitle", source: "English", target: "Spanish" })).toEqual([]);
  });

  it("names the missing capability and the languages", () => {
    const p = capabilityProblems(caps, { kind: "voice-stream", source: "German", target: "Korean" });
    expect(p.map((x) => x.field)).toEqual(["source_language", "target_language", "target_language"]);
    expect(p[0]?.message).toContain("speech recognition in German");
    expect(p[1]?.message).toContain("translation from German to Korean");
    expect(p[2]?.message).toContain("speech synthesis in Korean");
  });

  it("checks the preset voice and cloning", () => {
    const unknown = capabilityProblems(caps, { kind: "audiobook", source: "English", target: "English", voice: "nope", voiceField: "preset_voice_name" });
    expect(unknown).toEqual([{ field: "preset_voice_name", message: expect.stringContaining("unknown preset voice 'nope'"), input: "nope" }]);
    const wrong = capabilityProblems(caps, { kind: "audiobook", source: "English", target: "English", voice: "espeak:es" });
    expect(wrong[0]?.message).toContain("speaks Spanish, not English");
    const clone = capabilityProblems(caps, { kind: "audiobook", source: "English", target: "English", useVoiceClone: true });
    expect(clone[0]).toMatchObject({ field: "use_voice_clone" });
  });
});
