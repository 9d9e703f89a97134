import type { GatewayDeps } from "../deps.ts";
import type { GatewayApp } from "../http/context.ts";
import { respond } from "../http/respond.ts";
import { createRouter } from "../http/router.ts";

/** `/healthz` (the process answers) and `/readyz` (the store and every other dependency answer, each within 3 s). */
export function healthRoutes(deps: Pick<GatewayDeps, "store" | "readinessChecks">): GatewayApp {
  const app = createRouter();
  app.get("/healthz", (c) => respond(c, 200, { status: "ok" }));
  app.get("/readyz", async (c) => {
    const checks: Record<string, string> = {};
    let ready = true;
    const all = [{ name: "store", check: () => deps.store.ping() }, ...(deps.readinessChecks ?? [])];
    // every dependency at once, each bounded: a server that stopped answering makes /readyz false in seconds
    await Promise.all(
      all.map(async ({ name, check }) => {
        let timer: NodeJS.Timeout | undefined;
        try {
          await Promise.race([check(), new Promise((_, reject) => (timer = setTimeout(() => reject(new Error("no answer within 3 s")), 3_000)))]);
          checks[name] = "ok";
        } catch (error) {
          ready = false;
          checks[name] = error instanceof Error ? error.message : "failed";
        } finally {
          clearTimeout(timer);
        }
      }),
    );
    return respond(c, ready ? 200 : 503, { status: ready ? "ready" : "not ready", checks });
  });
  return app;
}
