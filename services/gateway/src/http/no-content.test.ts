import { createServer, request, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { Hono } from "hono";
import { getRequestListener } from "@hono/node-server";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { withoutTypeOnEmptyAnswers } from "./no-content.ts";

function send(port: number, method: string, path: string): Promise<{ status: number; headers: Record<string, unknown>; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: "127.0.0.1", port, method, path }, (res) => {
      let body = "";
      res.setEncoding("utf8").on("data", (d: string) => (body += d));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    req.on("error", reject).end();
  });
}

describe("answers without content", () => {
  let server: Server;
  let port: number;
  beforeAll(async () => {
    const app = new Hono();
    app.delete("/gone", (c) => c.body(null, 204));
    app.get("/text", (c) => c.text("hello"));
    app.get("/json", (c) => c.json({ a: 1 }));
    server = createServer(withoutTypeOnEmptyAnswers(getRequestListener(app.fetch)));
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it("a 204 carries no Content-Type (the server would give it text/plain)", async () => {
    const res = await send(port, "DELETE", "/gone");
    expect(res.status).toBe(204);
    expect(res.headers["content-type"]).toBeUndefined();
    expect(res.body).toBe("");
  });

  it("answers with content keep theirs", async () => {
    expect((await send(port, "GET", "/text")).headers["content-type"]).toMatch(/^text\/plain/);
    const json = await send(port, "GET", "/json");
    expect(json.headers["content-type"]).toMatch(/^application\/json/);
    expect(JSON.parse(json.body)).toEqual({ a: 1 });
  });
});
