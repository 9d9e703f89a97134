import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLogger } from "@voiceloc/log";
import { freePort, tempDir } from "@voiceloc/testing";
import { FetchRefusedError, fetchToFile, systemResolver, type FetchOptions, type Resolver } from "./index.ts";
import { serveHttp, serveHttps, type TestServer } from "./test-servers.ts";

let tmp: { path: string; cleanup: () => Promise<void> };
let dest: string;
let main: TestServer; // the allow-listed server
let other: TestServer; // a loopback server that is NOT allow-listed
const timers = new Set<NodeJS.Timeout>();

function later(ms: number, fn: () => void): void {
  const t = setTimeout(() => {
    timers.delete(t);
    fn();
  }, ms);
  timers.add(t);
}

beforeAll(async () => {
  tmp = await tempDir("voiceloc-fetch-http-");
  dest = join(tmp.path, "dest");
  other = await serveHttp((_req, res) => res.end("other"));
  main = await serveHttp((req, res) => {
    const url = new URL(req.url ?? "/", "http://x");
    const p = url.pathname;
    const to = url.searchParams.get("to");
    if (p === "/audio.wav") {
      res.writeHead(200, { "content-type": "audio/wav", "content-length": "10" });
      res.end("0123456789");
    } else if (p.startsWith("/hop/")) {
      const n = Number(p.slice(5));
      const code = [301, 302, 303, 307, 308][n % 5] ?? 302;
      res.writeHead(code, { location: n > 0 ? `/hop/${n - 1}` : "/audio.wav" });
      res.end();
    } else if (p === "/loop") {
      res.writeHead(302, { location: "/loop" });
      res.end();
    } else if (p === "/redirect" && to !== null) {
      res.writeHead(302, { location: to });
      res.end();
    } else if (p === "/no-location") {
      res.writeHead(302);
      res.end();
    } else if (p.startsWith("/status/")) {
      res.writeHead(Number(p.slice(8)));
      res.end("error page");
    } else if (p === "/declared-big") {
      res.writeHead(200, { "content-length": String(5000) });
      res.end(Buffer.alloc(5000));
    } else if (p === "/chunked") {
      const n = Number(url.searchParams.get("n") ?? "0");
      res.writeHead(200, { "content-type": "application/octet-stream" });
      let sent = 0;
      const step = (): void => {
        if (sent >= n || res.destroyed) return void res.end();
        const size = Math.min(256, n - sent);
        sent += size;
        res.write(Buffer.alloc(size, 1));
        later(1, step);
      };
      step();
    } else if (p === "/endless") {
      res.writeHead(200);
      const pump = (): void => {
        if (res.destroyed) return;
        if (res.write(Buffer.alloc(64 * 1024))) later(0, pump);
        else res.once("drain", pump);
      };
      pump();
    } else if (p === "/hang") {
      // never answers
    } else if (p === "/drip") {
      res.writeHead(200);
      const drip = (): void => {
        if (res.destroyed) return;
        res.write("x");
        later(50, drip);
      };
      drip();
    } else if (p.startsWith("/slow-hop/")) {
      const n = Number(p.slice(10));
      later(150, () => {
        res.writeHead(302, { location: n > 0 ? `/slow-hop/${n - 1}` : "/audio.wav" });
        res.end();
      });
    } else if (p === "/empty") {
      res.writeHead(204);
      res.end();
    } else {
      res.writeHead(404);
      res.end();
    }
  });
});

afterAll(async () => {
  for (const t of timers) clearTimeout(t);
  await main.close();
  await other.close();
  await tmp.cleanup();
});

function allowMain(extra: Partial<FetchOptions> = {}): FetchOptions {
  return { mediaRoot: tmp.path, allowPrivateHosts: [`127.0.0.1:${main.port}`], maxBytes: 1000, timeoutMs: 5000, maxRedirects: 5, ...extra };
}

async function refusal(ref: string, options: FetchOptions): Promise<FetchRefusedError> {
  try {
    await fetchToFile(ref, dest, options);
  } catch (error) {
    expect(error).toBeInstanceOf(FetchRefusedError);
    return error as FetchRefusedError;
  }
  throw new Error(`expected ${ref} to be refused`);
}

async function leftovers(): Promise<number> {
  try {
    return (await readdir(dest)).filter((name) => name.startsWith("input-")).length;
  } catch {
    return 0;
  }
}

describe("fetchToFile over http: the default guard", () => {
  it("refuses loopback servers, by address or by name, without sending a request", async () => {
    const before = main.requests.length;
    const bare: FetchOptions = { mediaRoot: tmp.path };
    for (const ref of [
      `${main.origin}/audio.wav`,
      `http://localhost:${main.port}/audio.wav`,
      `http://[::1]:${main.port}/audio.wav`,
      `http://2130706433:${main.port}/audio.wav`,
      `http://0x7f.1:${main.port}/audio.wav`,
      `http://[::ffff:127.0.0.1]:${main.port}/audio.wav`,
      `http://0.0.0.0:${main.port}/audio.wav`,
    ]) {
      expect((await refusal(ref, bare)).code, ref).toBe("address_not_allowed");
    }
    expect(main.requests.length).toBe(before);
  });

  it("only exempts the listed host and port", async () => {
    expect((await refusal(`${other.origin}/`, allowMain())).code).toBe("address_not_allowed");
    expect(other.requests.length).toBe(0);
  });
});

describe("fetchToFile over http: allow-listed loopback server", () => {
  it("downloads the body to a file with size, content type and extension", async () => {
    const result = await fetchToFile(`${main.origin}/audio.wav?sig=abc`, dest, allowMain());
    expect(result).toMatchObject({ size: 10, contentType: "audio/wav", sourceKind: "http" });
    expect(result.path.endsWith(".wav")).toBe(true);
    expect(await readFile(result.path, "utf8")).toBe("0123456789");
    const seen = main.requests.at(-1);
    expect(seen?.url).toBe("/audio.wav?sig=abc");
    expect(seen?.headers.host).toBe(`127.0.0.1:${main.port}`);
  });

  it("connects to the checked address while keeping the name in Host; resolves once per hop (no rebinding)", async () => {
    const calls: string[] = [];
    // A second answer would point elsewhere on loopback (nothing listens on 127.0.0.2): if the socket
    // re-resolved at connect time, the fetch would fail.
    const resolver: Resolver = async (host) => {
      calls.push(host);
      return [{ address: calls.length === 1 ? "127.0.0.1" : "127.0.0.2", family: 4 }];
    };
    const result = await fetchToFile(`http://media.test:${main.port}/audio.wav`, dest, {
      ...allowMain(),
      allowPrivateHosts: [`media.test:${main.port}`],
      resolver,
    });
    expect(result.size).toBe(10);
    expect(calls).toEqual(["media.test"]);
    expect(main.requests.at(-1)?.headers.host).toBe(`media.test:${main.port}`);
  });

  it("returns an empty file for 204", async () => {
    const result = await fetchToFile(`${main.origin}/empty`, dest, allowMain());
    expect(result.size).toBe(0);
  });

  it("says connection_failed when nothing listens, host_not_found when the name does not resolve", async () => {
    const port = await freePort();
    expect((await refusal(`http://127.0.0.1:${port}/`, allowMain({ allowPrivateHosts: [`127.0.0.1:${port}`] }))).code).toBe("connection_failed");
    const resolver: Resolver = async () => {
      throw Object.assign(new Error("ENOTFOUND"), { code: "ENOTFOUND" });
    };
    const error = await refusal("http://nowhere.test/", allowMain({ resolver }));
    expect(error.code).toBe("host_not_found");
  });
});

describe("fetchToFile over http: status codes", () => {
  it("turns non-2xx answers into http_status with the code", async () => {
    const e404 = await refusal(`${main.origin}/status/404`, allowMain());
    expect(e404).toMatchObject({ code: "http_status", status: 404 });
    expect(e404.message).toContain("404");
    expect(await refusal(`${main.origin}/status/403`, allowMain())).toMatchObject({ code: "http_status", status: 403 });
    expect(await refusal(`${main.origin}/status/500`, allowMain())).toMatchObject({ code: "http_status", status: 500 });
    expect(await refusal(`${main.origin}/status/429`, allowMain())).toMatchObject({ code: "http_status", status: 429 });
    expect(await refusal(`${main.origin}/no-location`, allowMain())).toMatchObject({ code: "http_status", status: 302 });
  });
});

describe("fetchToFile over http: redirects", () => {
  it("follows 301/302/303/307/308 and relative Locations up to maxRedirects", async () => {
    const result = await fetchToFile(`${main.origin}/hop/4`, dest, allowMain({ maxRedirects: 5 }));
    expect(await readFile(result.path, "utf8")).toBe("0123456789");
  });

  it("stops at maxRedirects", async () => {
    expect((await refusal(`${main.origin}/hop/4`, allowMain({ maxRedirects: 4 }))).code).toBe("too_many_redirects");
    expect((await refusal(`${main.origin}/hop/0`, allowMain({ maxRedirects: 0 }))).code).toBe("too_many_redirects");
    expect((await refusal(`${main.origin}/loop`, allowMain())).code).toBe("too_many_redirects");
  });

  it("re-checks every hop: an allowed host redirecting to a non-allowed private address is refused", async () => {
    // internal.test is made up; everything else (localhost) goes to the system resolver.
    const resolver: Resolver = async (host) => (host === "internal.test" ? [{ address: "10.0.0.8", family: 4 }] : systemResolver(host));
    for (const target of [
      `${other.origin}/`,
      `http://localhost:${other.port}/`,
      "http://169.254.169.254/latest/meta-data/",
      "http://[fd00:ec2::254]/latest/meta-data/",
      "http://metadata.google.internal/computeMetadata/v1/",
      "http://internal.test/",
    ]) {
      const error = await refusal(`${main.origin}/redirect?to=${encodeURIComponent(target)}`, allowMain({ resolver }));
      expect(error.code, target).toBe("address_not_allowed");
    }
    expect(other.requests.length).toBe(0);
  });

  it("follows a redirect to another allow-listed host", async () => {
    const result = await fetchToFile(`${main.origin}/redirect?to=${encodeURIComponent(`${other.origin}/x`)}`, dest, {
      ...allowMain(),
      allowPrivateHosts: [`127.0.0.1:${main.port}`, `127.0.0.1:${other.port}`],
    });
    expect(await readFile(result.path, "utf8")).toBe("other");
    other.requests.length = 0;
  });

  it("refuses redirects to other schemes and to URLs with credentials", async () => {
    const to = (target: string): string => `${main.origin}/redirect?to=${encodeURIComponent(target)}`;
    expect((await refusal(to("file:///etc/passwd"), allowMain())).code).toBe("scheme_not_allowed");
    expect((await refusal(to("s3://bucket/key"), allowMain())).code).toBe("scheme_not_allowed");
    expect((await refusal(to("gopher://127.0.0.1:70/_x"), allowMain())).code).toBe("scheme_not_allowed");
    expect((await refusal(to(`http://user:pw@127.0.0.1:${main.port}/audio.wav`), allowMain())).code).toBe("credentials_not_allowed");
  });
});

describe("fetchToFile over http: size cap", () => {
  it("refuses a declared Content-Length over the cap before reading", async () => {
    const error = await refusal(`${main.origin}/declared-big`, allowMain({ maxBytes: 4999 }));
    expect(error.code).toBe("too_large");
  });

  it("accepts exactly the cap and refuses one byte more while streaming, leaving no file", async () => {
    const before = await leftovers();
    expect((await fetchToFile(`${main.origin}/chunked?n=1000`, dest, allowMain({ maxBytes: 1000 }))).size).toBe(1000);
    expect((await refusal(`${main.origin}/chunked?n=1001`, allowMain({ maxBytes: 1000 }))).code).toBe("too_large");
    expect(await leftovers()).toBe(before + 1);
  });

  it("aborts an endless body as soon as it passes the cap", async () => {
    const before = await leftovers();
    const started = Date.now();
    expect((await refusal(`${main.origin}/endless`, allowMain({ maxBytes: 1024 * 1024 }))).code).toBe("too_large");
    expect(Date.now() - started).toBeLessThan(4000);
    expect(await leftovers()).toBe(before);
  });
});

describe("fetchToFile over http: time cap", () => {
  it("times out a server that never answers", async () => {
    const started = Date.now();
    const error = await refusal(`${main.origin}/hang`, allowMain({ timeoutMs: 300 }));
    expect(error.code).toBe("timeout");
    expect(Date.now() - started).toBeLessThan(3000);
  });

  it("times out a body that trickles in, leaving no file", async () => {
    const before = await leftovers();
    expect((await refusal(`${main.origin}/drip`, allowMain({ timeoutMs: 300, maxBytes: 1_000_000 }))).code).toBe("timeout");
    expect(await leftovers()).toBe(before);
  });

  it("counts the time over all redirects together", async () => {
    expect((await refusal(`${main.origin}/slow-hop/3`, allowMain({ timeoutMs: 400 }))).code).toBe("timeout");
  });

  it("can be cancelled by the caller", async () => {
    const controller = new AbortController();
    later(100, () => controller.abort());
    expect((await refusal(`${main.origin}/hang`, allowMain({ signal: controller.signal }))).code).toBe("cancelled");
  });
});

describe("fetchToFile over https", () => {
  let tlsServer: TestServer;
  let ca: Buffer;
  beforeAll(async () => {
    const dir = join(import.meta.dirname, "test-fixtures");
    ca = await readFile(join(dir, "media.test.crt"));
    tlsServer = await serveHttps((_req, res) => res.end("tls body"), { cert: ca, key: await readFile(join(dir, "media.test.key")) });
  });
  afterAll(async () => {
    await tlsServer.close();
  });

  it("connects to the checked address with SNI and certificate check on the original name", async () => {
    const resolver: Resolver = async () => [{ address: "127.0.0.1", family: 4 }];
    const options = allowMain({ allowPrivateHosts: [`media.test:${tlsServer.port}`], resolver, ca });
    const result = await fetchToFile(`https://media.test:${tlsServer.port}/a.mp3`, dest, options);
    expect(await readFile(result.path, "utf8")).toBe("tls body");
    expect(tlsServer.requests.at(-1)?.servername).toBe("media.test");
    expect(tlsServer.requests.at(-1)?.headers.host).toBe(`media.test:${tlsServer.port}`);
  });

  it("fails with connection_failed when the certificate is not trusted", async () => {
    const resolver: Resolver = async () => [{ address: "127.0.0.1", family: 4 }];
    const error = await refusal(`https://media.test:${tlsServer.port}/a.mp3`, allowMain({ allowPrivateHosts: [`media.test:${tlsServer.port}`], resolver }));
    expect(error.code).toBe("connection_failed");
  });
});

describe("fetchToFile over http: logging", () => {
  it("logs through the given logger, never the path or query of a URL", async () => {
    const lines: string[] = [];
    const logger = createLogger({ level: "debug", destination: { write: (line: string) => void lines.push(line) } });
    await fetchToFile(`${main.origin}/hop/1?sig=TOPSECRET`, dest, allowMain({ logger }));
    await refusal(`${main.origin}/status/404?sig=TOPSECRET`, allowMain({ logger }));
    expect(lines.length).toBeGreaterThan(2);
    expect(lines.join("\n")).not.toContain("TOPSECRET");
    expect(lines.join("\n")).toContain('"component":"fetch"');
  });
});
