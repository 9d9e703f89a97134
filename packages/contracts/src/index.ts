export * from "./languages.ts";
export * from "./api.ts";
export * from "./bus.ts";
export * from "./capabilities.ts";
export * from "./pydantic/index.ts";
export * from "./catalog.ts";
export * from "./owner.ts";
export * from "./webhooks.ts";
