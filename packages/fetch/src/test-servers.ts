// Test helpers (not exported from the package): tiny servers on 127.0.0.1 only.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { createServer as createTlsServer } from "node:https";
import type { AddressInfo, Socket } from "node:net";
import type { TLSSocket } from "node:tls";

export interface SeenRequest {
  method: string;
  url: string;
  headers: IncomingMessage["headers"];
  servername?: string;
}

export interface TestServer {
  port: number;
  /** `http://127.0.0.1:PORT` (or https). */
  origin: string;
  requests: SeenRequest[];
  close: () => Promise<void>;
}

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

async function listen(server: Server, scheme: "http" | "https", requests: SeenRequest[]): Promise<TestServer> {
  const sockets = new Set<Socket>();
  server.on("connection", (socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    origin: `${scheme}://127.0.0.1:${port}`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

export function serveHttp(handler: Handler): Promise<TestServer> {
  const requests: SeenRequest[] = [];
  const server = createServer((req, res) => {
    requests.push({ method: req.method ?? "", url: req.url ?? "", headers: req.headers });
    handler(req, res);
  });
  return listen(server, "http", requests);
}

export function serveHttps(handler: Handler, tls: { cert: Buffer; key: Buffer }): Promise<TestServer> {
  const requests: SeenRequest[] = [];
  const server = createTlsServer(tls, (req, res) => {
    const servername = (req.socket as TLSSocket).servername;
    requests.push({ method: req.method ?? "", url: req.url ?? "", headers: req.headers, ...(typeof servername === "string" ? { servername } : {}) });
    handler(req, res);
  });
  return listen(server, "https", requests);
}
