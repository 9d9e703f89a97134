export * from "./tmp.ts";
export * from "./nats.ts";
export * from "./media.ts";
export * from "./hostile.ts";
export * from "./sse.ts";
export * from "./browser.ts";
export * from "./openapi.ts";
export * from "./clone-services.ts";
