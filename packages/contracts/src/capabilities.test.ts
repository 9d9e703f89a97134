import { describe, expect, it } from "vitest";
import { CAPABILITY_KINDS, type Capabilities } from "./bus.ts";
import { capabilitiesFor, capabilityProblems, mergeCapabilities } from "./capabilities.ts";

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

describe("capability tables per kind", () => {
  it("each kind answers only what it uses", () => {
    const synthesis = capabilitiesFor("synthesis", caps);
    expect(synthesis.translation.pairs).toEqual([]);
    expect(synthesis.recognition.languages).toEqual([]);
    expect(synthesis.voices).toEqual(caps.voices);
    const audiobook = capabilitiesFor("audiobook", caps);
    expect(audiobook.recognition.languages).toEqual([]);
    expect(audiobook.translation.pairs).toEqual(caps.translation.pairs);
    const subtitle = capabilitiesFor("subtitle", caps);
    expect(subtitle.synthesis.languages).toEqual([]);
    expect(subtitle.voices).toEqual([]);
    expect(subtitle.recognition.languages).toEqual(["English"]);
    expect(capabilitiesFor("voice-stream", caps)).toEqual(caps);
  });

  it("the kinds of one process merge back into exactly its table", () => {
    expect(mergeCapabilities(CAPABILITY_KINDS.map((kind) => capabilitiesFor(kind, caps)))).toEqual(caps);
  });

  it("a merge lists what at least one kind offers, without repeats", () => {
    const other: Capabilities = {
      synthesis: { languages: ["French", "English"] },
      recognition: { languages: ["German"] },
      translation: {
        pairs: [
          { source: "English", target: "Spanish", pivot: null, quality: "llm" },
          { source: "English", target: "French", pivot: "Spanish", quality: "rule-based" },
        ],
      },
      cloning: { available: true, languages: ["French"] },
      voices: [{ name: "espeak:fr", language: "French", engine: "espeak", description: "", default: true }],
    };
    const merged = mergeCapabilities([capabilitiesFor("audiobook", caps), capabilitiesFor("subtitle", other)]);
    expect(merged.synthesis.languages).toEqual(["English", "Spanish"]);
    expect(merged.recognition.languages).toEqual(["German"]);
    expect(merged.translation.pairs.map((p) => `${p.source}>${p.target}:${p.quality}`)).toEqual([
      "English>Spanish:rule-based",
      "Spanish>English:rule-based",
      "English>French:rule-based",
    ]);
    expect(merged.cloning).toEqual({ available: false, languages: [] });
    expect(mergeCapabilities([])).toEqual({ synthesis: { languages: [] }, recognition: { languages: [] }, translation: { pairs: [] }, cloning: { available: false, languages: [] }, voices: [] });
  });

  it("keeps each synthesis language's engine order where workers state it, for the kinds that speak", () => {
    const speaking: Capabilities = {
      ...caps,
      synthesis: { languages: ["English", "Spanish"], engines: [{ language: "English", engines: ["piper", "espeak"] }, { language: "Spanish", engines: ["espeak"] }] },
    };
    expect(capabilitiesFor("audiobook", speaking).synthesis.engines).toEqual(speaking.synthesis.engines);
    expect(capabilitiesFor("subtitle", speaking).synthesis).toEqual({ languages: [], engines: [] });
    const older: Capabilities = { ...caps, synthesis: { languages: ["English", "French"] } };
    const merged = mergeCapabilities([capabilitiesFor("synthesis", speaking), capabilitiesFor("audiobook", older)]);
    // The first table that states a language's chain wins; a table of an older worker states none.
    expect(merged.synthesis.engines).toEqual([
      { language: "English", engines: ["piper", "espeak"] },
      { language: "Spanish", engines: ["espeak"] },
    ]);
    expect(mergeCapabilities([older]).synthesis).toEqual({ languages: ["English", "French"] });
  });
});
