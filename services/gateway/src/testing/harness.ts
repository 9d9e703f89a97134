import { request as httpRequest } from "node:http";
import { Writable } from "node:stream";
import { loadConfig } from "@voiceloc/config";
import { silentLogger } from "@voiceloc/log";
import { tempDir } from "@voiceloc/testing";
import { createGateway, type GatewayOptions, type GatewayService } from "../gateway.ts";

export const ALICE_KEY = "alice-dev-key-0001";
export const BOB_KEY = "bob-dev-key-0002";
export const JWT_SECRET = "test-secret-that-is-long-enough-for-hs256!";
export const BASE = "http://api.test";

export interface TestGateway {
  gateway: GatewayService;
  dataDir: string;
  request(method: string, path: string, init?: { body?: unknown; raw?: string; headers?: Record<string, string>; key?: string | null }): Promise<Response>;
  close(): Promise<void>;
}

/** A gateway on a fresh embedded store, with alice and bob seeded. */
export async function startTestGateway(
  env: Record<string, string> = {},
  options: Partial<Omit<GatewayOptions, "config" | "logger">> = {},
  dataDir?: string,
): Promise<TestGateway> {
  const dir = dataDir ? { path: dataDir, cleanup: async () => undefined } : await tempDir("voiceloc-gw-");
  const config = loadConfig({
    DATA_DIR: dir.path,
    VOICELOC_API_KEYS: `alice:${ALICE_KEY},bob:${BOB_KEY}`,
    JWT_SECRET,
    PUBLIC_BASE_URL: BASE,
    LOG_LEVEL: "silent",
    RATE_LIMIT_PER_MINUTE: "off", // tests of other behaviour send many requests at once; rate-limit.test.ts turns it on
    ...env,
  });
  const gateway = await createGateway({ config, logger: silentLogger(), ...options });
  return {
    gateway,
    dataDir: dir.path,
    request: (method, path, init = {}) => {
      const headers: Record<string, string> = { ...init.headers };
      if (init.key !== null) headers["API-KEY"] ??= init.key ?? ALICE_KEY;
      let body: string | undefined;
      if (init.raw !== undefined) body = init.raw;
      else if (init.body !== undefined) {
        body = JSON.stringify(init.body);
        headers["Content-Type"] ??= "application/json";
      }
      return Promise.resolve(gateway.app.request(`${BASE}${path}`, { method, headers, ...(body !== undefined ? { body } : {}) }));
    },
    close: async () => {
      await gateway.stop();
      await dir.cleanup();
    },
  };
}

/** A logger destination that keeps every JSON log line written to it, parsed, in `lines`. */
export function jsonLogSink(lines: Array<Record<string, unknown>> = []): { sink: Writable; lines: Array<Record<string, unknown>> } {
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString("utf8").split("\n")) if (line.trim() !== "") lines.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  return { sink, lines };
}

/** An answer read off the wire: status, the header fields in the order they were sent (less Node's own), the body. */
export interface WireAnswer {
  status: number;
  /** Header fields as sent, in order, without the ones Node adds (Date, Connection, Keep-Alive). */
  fields: Array<[string, string]>;
  body: string;
}

/** One request over a fresh connection to a listening server, answered with the header fields in the order they were sent. */
export function wireRequest(base: string, path: string, headers: Record<string, string> = {}, method = "GET"): Promise<WireAnswer> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(`${base}${path}`, { method, headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => {
        const fields: Array<[string, string]> = [];
        for (let i = 0; i + 1 < res.rawHeaders.length; i += 2) {
          const name = res.rawHeaders[i] as string;
          if (!["date", "connection", "keep-alive"].includes(name.toLowerCase())) fields.push([name, res.rawHeaders[i + 1] as string]);
        }
        resolve({ status: res.statusCode ?? 0, fields, body: Buffer.concat(chunks).toString("utf8") });
      });
    });
    req.on("error", reject);
    req.end();
  });
}
