export * from "./errors.ts";
export * from "./args.ts";
export * from "./process.ts";
export * from "./run.ts";
export * from "./probe.ts";
export * from "./duration.ts";
export * from "./resolve.ts";
export * from "./toolkit.ts";
