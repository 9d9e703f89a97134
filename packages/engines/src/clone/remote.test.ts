import { describe, expect, it } from "vitest";
import { retryAfterSeconds, serviceRoot, waitHint } from "./remote.ts";

describe("outside cloning services: shared pieces", () => {
  it("reads Retry-After as seconds or as an HTTP date", () => {
    const now = Date.parse("2026-11-28T12:00:00Z");
    const answer = (value?: string) => new Response(null, { status: 429, headers: value === undefined ? {} : { "retry-after": value } });
    expect(retryAfterSeconds(answer("12"), now)).toBe(12);
    expect(retryAfterSeconds(answer("Sat, 28 Nov 2026 12:01:30 GMT"), now)).toBe(90);
    expect(retryAfterSeconds(answer("Sat, 28 Nov 2026 11:00:00 GMT"), now)).toBe(0);
    expect(retryAfterSeconds(answer("soon"), now)).toBeUndefined();
    expect(retryAfterSeconds(answer(), now)).toBeUndefined();
    expect(waitHint(answer("1"))).toBe(" It asks to wait 1 second before trying again.");
    expect(waitHint(answer())).toBe("");
  });

  it("takes a service root with or without /v1 and refuses other schemes", () => {
    expect(serviceRoot("http://127.0.0.1:4123/v1/", "voice library")).toEqual({ root: "http://127.0.0.1:4123", host: "127.0.0.1:4123" });
    expect(serviceRoot("https://api.elevenlabs.io", "ElevenLabs").root).toBe("https://api.elevenlabs.io");
    expect(() => serviceRoot("ftp://example.org", "ElevenLabs")).toThrow("The ElevenLabs address must start with http:// or https://.");
    expect(() => serviceRoot("not a url", "voice library")).toThrow('The voice library address "not a url" is not a valid URL.');
  });
});
