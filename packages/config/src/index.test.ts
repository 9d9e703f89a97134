import { describe, expect, it } from "vitest";
import { ConfigError, loadConfig, redactConfig } from "./index.ts";

describe("loadConfig", () => {
  it("applies defaults", () => {
    const c = loadConfig({});
    expect(c.port).toBe(8080);
    expect(c.publicBaseUrl).toBe("http://localhost:8080");
    expect(c.services).toEqual(["gateway", "audiobook", "voice-stream", "subtitle", "synthesis"]);
    expect(c.mongodb).toBeUndefined();
    expect(c.mediaRoot.endsWith("/data/media")).toBe(true);
  });

  it("parses seed keys and service lists", () => {
    const c = loadConfig({ VOICELOC_API_KEYS: "alice:key1, bob:key2", SERVICES: "gateway,synthesis", PORT: "9000" });
    expect(c.seedKeys).toEqual([
      { account: "alice", key: "key1" },
      { account: "bob", key: "key2" },
    ]);
    expect(c.services).toEqual(["gateway", "synthesis"]);
    expect(c.port).toBe(9000);
  });

  it("names every wrong variable", () => {
    try {
      loadConfig({ PORT: "eighty", LOG_LEVEL: "loud", MONGODB_URL: "http://x", SERVICES: "gateway,teleport", JWT_SECRET: "short" });
      expect.unreachable();
    } catch (error) {
      expect(error).toBeInstanceOf(ConfigError);
      const message = (error as ConfigError).message;
      for (const name of ["PORT", "LOG_LEVEL", "MONGODB_URL", "SERVICES", "JWT_SECRET"]) expect(message).toContain(name);
      expect(message).toContain("teleport");
    }
  });

  it("refuses a malformed key list", () => {
    expect(() => loadConfig({ VOICELOC_API_KEYS: "alice" })).toThrow(/VOICELOC_API_KEYS/);
  });

  it("redacts secrets", () => {
    const c = loadConfig({
      VOICELOC_API_KEYS: "alice:supersecretkey",
      JWT_SECRET: "x".repeat(40),
      MONGODB_URL: "mongodb://user:pw@db:27017",
    });
    const text = JSON.stringify(redactConfig(c));
    expect(text).not.toContain("supersecretkey");
    expect(text).not.toContain("x".repeat(40));
    expect(text).not.toContain(":pw@");
  });

  it("reads the request rate limit: on by default, burst of 10 seconds' worth, 0 or off turns it off", () => {
    expect(loadConfig({}).rateLimit).toEqual({ perMinute: 600, burst: 100 });
    expect(loadConfig({ RATE_LIMIT_PER_MINUTE: "90" }).rateLimit).toEqual({ perMinute: 90, burst: 15 });
    expect(loadConfig({ RATE_LIMIT_PER_MINUTE: "90", RATE_LIMIT_BURST: "5" }).rateLimit).toEqual({ perMinute: 90, burst: 5 });
    expect(loadConfig({ RATE_LIMIT_PER_MINUTE: "0" }).rateLimit).toBeUndefined();
    expect(loadConfig({ RATE_LIMIT_PER_MINUTE: "OFF" }).rateLimit).toBeUndefined();
    expect(() => loadConfig({ RATE_LIMIT_PER_MINUTE: "-5" })).toThrow(/RATE_LIMIT_PER_MINUTE/);
    expect(() => loadConfig({ RATE_LIMIT_PER_MINUTE: "1.5" })).toThrow(/RATE_LIMIT_PER_MINUTE/);
    expect(() => loadConfig({ RATE_LIMIT_BURST: "0" })).toThrow(/RATE_LIMIT_BURST/);
  });
});
