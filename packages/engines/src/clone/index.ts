export * from "./types.ts";
export * from "./elevenlabs.ts";
export * from "./voice-library.ts";
