// The benchmark's reference: a bare Hono + @hono/node-server handler in a plain `node` process
// (no tsx), answering each route with fixed JSON bytes. Usage: node bare-server.mjs <route> <file>...
// Prints the port it listens on (127.0.0.1, chosen by the system) as its first line.
import { readFileSync } from "node:fs";
import { Hono } from "hono";
import { serve } from "@hono/node-server";

const app = new Hono();
const args = process.argv.slice(2);
for (let i = 0; i + 1 < args.length; i += 2) {
  const body = readFileSync(args[i + 1], "utf8");
  app.get(args[i], (c) => c.body(body, 200, { "Content-Type": "application/json" }));
}

serve({ fetch: app.fetch, port: 0, hostname: "127.0.0.1" }, (info) => {
  process.stdout.write(`${info.port}\n`);
});
// Nothing to finish: the load generator has gone when the benchmark stops it.
process.on("SIGTERM", () => process.exit(0));
process.on("SIGINT", () => process.exit(0));
