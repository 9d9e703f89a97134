import { describe, expect, it } from "vitest";
import { Webhook } from "standardwebhooks";
import { retryDelayMs, webhookMessageId } from "./delivery.ts";
import { SecretBox, newWebhookSecret } from "./secrets.ts";
import { webhookUrlProblem, webhookUrlShapeProblem } from "./url.ts";

describe("retry schedule", () => {
  it("doubles from the base with ±20 % jitter, capped at a day; the defaults span about a day over 12 attempts", () => {
    expect(retryDelayMs(1, 45_000, () => 0.5)).toBe(45_000);
    expect(retryDelayMs(2, 45_000, () => 0.5)).toBe(90_000);
    expect(retryDelayMs(3, 45_000, () => 0)).toBe(Math.round(180_000 * 0.8));
    expect(retryDelayMs(3, 45_000, () => 1)).toBe(Math.round(180_000 * 1.2));
    expect(retryDelayMs(50, 3_600_000, () => 1)).toBe(Math.round(24 * 3_600_000 * 1.2));
    let total = 0;
    for (let attempt = 1; attempt < 12; attempt++) total += retryDelayMs(attempt, 45_000, () => 0.5);
    expect(total / 3_600_000).toBeGreaterThan(20);
    expect(total / 3_600_000).toBeLessThan(30);
  });

  it("gives each record and event one webhook-id", () => {
    const id = "0193f1c2-a7b4-7cc2-a1f0-4e4ab2b1a4d0";
    expect(webhookMessageId(id, "audio_book.completed")).toBe("msg_0193f1c2a7b47cc2a1f04e4ab2b1a4d0_audio_book_completed");
    expect(webhookMessageId(id, "audio_book.failed")).not.toBe(webhookMessageId(id, "audio_book.completed"));
  });
});

describe("endpoint secrets", () => {
  it("are whsec_ + 24 random bytes that standardwebhooks signs and verifies with", () => {
    const secret = newWebhookSecret();
    expect(secret).not.toBe(newWebhookSecret());
    const wh = new Webhook(secret);
    const body = JSON.stringify({ type: "audio_book.completed" });
    const now = new Date();
    const signature = wh.sign("msg_1", now, body);
    expect(wh.verify(body, { "webhook-id": "msg_1", "webhook-timestamp": String(Math.floor(now.getTime() / 1000)), "webhook-signature": signature })).toEqual({
      type: "audio_book.completed",
    });
  });

  it("open only under the same signing secret and for the endpoint they were sealed for", () => {
    const box = new SecretBox("a-signing-secret-that-is-long-enough-0001");
    const sealed = box.seal("whsec_abc", "endpoint-1");
    expect(sealed).not.toContain("whsec_abc");
    expect(box.open(sealed, "endpoint-1")).toBe("whsec_abc");
    expect(box.seal("whsec_abc", "endpoint-1")).not.toBe(sealed);
    expect(() => box.open(sealed, "endpoint-2")).toThrow();
    expect(() => new SecretBox("another-signing-secret-long-enough-00002").open(sealed, "endpoint-1")).toThrow();
    const tampered = `${sealed.slice(0, -2)}${sealed.at(-2) === "A" ? "B" : "A"}${sealed.slice(-1)}`;
    expect(() => box.open(tampered, "endpoint-1")).toThrow();
  });
});

describe("webhook URLs", () => {
  const resolver = (answers: Record<string, string[]>) => async (host: string) => {
    const found = answers[host];
    if (!found) throw Object.assign(new Error("not found"), { code: "ENOTFOUND" });
    return found.map((address) => ({ address, family: address.includes(":") ? (6 as const) : (4 as const) }));
  };

  it("refuses a name resolving to a private address at registration, accepts public and unresolvable names", async () => {
    const policy = { allowPrivateHosts: ["hooks.internal"], resolver: resolver({ "evil.example": ["10.0.0.7"], "good.example": ["93.184.215.14"], "hooks.internal": ["10.0.0.8"] }) };
    expect(await webhookUrlProblem("https://evil.example/x", policy)).toMatch(/non-public address/);
    expect(await webhookUrlProblem("https://good.example/x", policy)).toBeNull();
    expect(await webhookUrlProblem("https://not-yet.example/x", policy)).toBeNull();
    expect(await webhookUrlProblem("http://hooks.internal/x", policy)).toBeNull();
    expect(await webhookUrlProblem("http://good.example/x", policy)).toMatch(/https/);
  });

  it("says what is wrong with the shape in plain words", () => {
    const policy = { allowPrivateHosts: [] };
    expect(webhookUrlShapeProblem("https://8.8.8.8/x#frag", policy)).toMatch(/fragment/);
    expect(webhookUrlShapeProblem("https://u:p@8.8.8.8/x", policy)).toMatch(/credentials|user/i);
    expect(webhookUrlShapeProblem("mailto:a@b.c", policy)).toMatch(/https/);
  });
});
