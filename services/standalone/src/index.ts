export { startRuntime, type Runtime } from "./runtime.ts";
