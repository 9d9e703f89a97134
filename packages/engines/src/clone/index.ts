export * from "./types.ts";
export * from "./pitch.ts";
export * from "./analyze.ts";
export * from "./match.ts";
export * from "./speak.ts";
export * from "./elevenlabs.ts";
export * from "./voice-library.ts";
