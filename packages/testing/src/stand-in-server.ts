/**
 * The small HTTP machinery the engine stand-ins share: a server on a free local port that records
 * each request and can be told to fail the next requests of a route (a status with a body and
 * headers, such as 429 with Retry-After; a hang; a malformed 200).
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { Readable } from "node:stream";

export interface EngineFault {
  status?: number;
  body?: unknown;
  headers?: Record<string, string>;
  /** Never answer (the client's time limit must end the call). */
  hang?: boolean;
  /** Answer 200 with a body that is not JSON. */
  malformed?: boolean;
}

export interface EngineStandInRequest {
  method: string;
  path: string;
  /** The query string's parameters. */
  query: URLSearchParams;
  headers: IncomingMessage["headers"];
  /** A JSON body, parsed. */
  json?: unknown;
  /** Text fields of a multipart or urlencoded form. */
  fields: Record<string, string>;
  /** Files of a multipart form. */
  files: Array<{ field: string; filename: string; type: string; bytes: Buffer }>;
}

export interface EngineStandIn<Route extends string> {
  url: string;
  requests: EngineStandInRequest[];
  /** The next `times` requests of `route` ("any": every route) meet `fault`. */
  fail(route: Route | "any", fault: EngineFault, times?: number): void;
  close(): Promise<void>;
}

export function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = typeof body === "string" ? body : JSON.stringify(body);
  res.writeHead(status, { "content-type": typeof body === "string" ? "text/plain" : "application/json", ...headers });
  res.end(text);
}

async function readRequest(req: IncomingMessage): Promise<EngineStandInRequest> {
  const url = new URL(req.url ?? "/", "http://stand-in");
  const type = String(req.headers["content-type"] ?? "");
  const record: EngineStandInRequest = { method: req.method ?? "GET", path: url.pathname, query: url.searchParams, headers: req.headers, fields: {}, files: [] };
  if (req.method === "GET" || req.method === "HEAD") return record;
  if (type.startsWith("multipart/form-data") || type.startsWith("application/x-www-form-urlencoded")) {
    const request = new Request(url, { method: "POST", headers: { "content-type": type }, body: Readable.toWeb(req) as ReadableStream, duplex: "half" } as RequestInit);
    const form = await request.formData();
    for (const [field, value] of form.entries()) {
      if (typeof value === "string") record.fields[field] = value;
      else record.files.push({ field, filename: value.name, type: value.type, bytes: Buffer.from(await value.arrayBuffer()) });
    }
    return record;
  }
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const text = Buffer.concat(chunks).toString("utf8");
  try {
    record.json = text === "" ? undefined : (JSON.parse(text) as unknown);
  } catch {
    record.json = text;
  }
  return record;
}

export async function startEngineStandIn<Route extends string>(
  route: (req: EngineStandInRequest) => Route | undefined,
  handle: (req: EngineStandInRequest, res: ServerResponse) => void | Promise<void>,
): Promise<EngineStandIn<Route>> {
  const faults: Array<{ route: Route | "any"; fault: EngineFault; left: number }> = [];
  const requests: EngineStandInRequest[] = [];
  const hanging = new Set<ServerResponse>();
  const server = createServer((req, res) => {
    void (async () => {
      const parsed = await readRequest(req);
      requests.push(parsed);
      const name = route(parsed);
      const slot = name === undefined ? undefined : faults.find((f) => f.left > 0 && (f.route === "any" || f.route === name));
      if (slot) {
        slot.left -= 1;
        const { fault } = slot;
        if (fault.hang) {
          hanging.add(res);
          return;
        }
        if (fault.malformed) return sendJson(res, 200, "{ not json", { "content-type": "application/json" });
        if (fault.status !== undefined) return sendJson(res, fault.status, fault.body ?? "", fault.headers);
      }
      await handle(parsed, res);
    })().catch((error: unknown) => sendJson(res, 500, { error: `stand-in failure: ${String(error)}` }));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  if (address === null || typeof address === "string") throw new Error("the stand-in has no port");
  return {
    url: `http://127.0.0.1:${address.port}`,
    requests,
    fail(r, fault, times = 1) {
      faults.push({ route: r, fault, left: times });
    },
    async close() {
      for (const res of hanging) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
