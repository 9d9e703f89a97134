export { createApp } from "./app.ts";
export type { GatewayDeps } from "./deps.ts";
export { createGateway, openGatewayStore, resolveSigningSecret, type GatewayService, type GatewayOptions } from "./gateway.ts";
export type { TaskDispatcher, TaskKind, UrlSigner } from "./records/kinds.ts";
export type { Synthesizer, SynthesisRequest } from "./speech/synthesizer.ts";
export { runKeysCli } from "./cli/keys.ts";
export { runAccountsCli } from "./cli/accounts.ts";
