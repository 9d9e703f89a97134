import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from "node:crypto";

/** A new endpoint's signing secret: `whsec_` + base64 of 24 random bytes (Standard Webhooks' format). */
export function newWebhookSecret(): string {
  return `whsec_${randomBytes(24).toString("base64")}`;
}

const VERSION = "v1";
const IV_BYTES = 12;
const TAG_BYTES = 16;

/**
 * Seals endpoint secrets at rest: AES-256-GCM under a key derived (HKDF-SHA256) from the gateway's
 * signing secret (SIGNING_SECRET, or DATA_DIR/signing.key on a single machine), each bound to its
 * endpoint id as additional data, so a sealed secret copied onto another endpoint does not open.
 * Changing SIGNING_SECRET makes the stored secrets unreadable: deliveries then fail with that reason.
 */
export class SecretBox {
  private readonly key: Buffer;

  constructor(signingSecret: string) {
    this.key = Buffer.from(hkdfSync("sha256", signingSecret, "voiceloc", "webhook endpoint secrets v1", 32));
  }

  seal(plain: string, endpointId: string): string {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv("aes-256-gcm", this.key, iv);
    cipher.setAAD(Buffer.from(endpointId, "utf8"));
    const body = Buffer.concat([cipher.update(plain, "utf8"), cipher.final()]);
    return `${VERSION}.${Buffer.concat([iv, cipher.getAuthTag(), body]).toString("base64url")}`;
  }

  /** The plain secret; throws when it was sealed under another key or for another endpoint. */
  open(sealed: string, endpointId: string): string {
    const [version, data] = sealed.split(".");
    if (version !== VERSION || data === undefined) throw new Error("unknown sealed secret format");
    const raw = Buffer.from(data, "base64url");
    const decipher = createDecipheriv("aes-256-gcm", this.key, raw.subarray(0, IV_BYTES));
    decipher.setAAD(Buffer.from(endpointId, "utf8"));
    decipher.setAuthTag(raw.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
    return Buffer.concat([decipher.update(raw.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]).toString("utf8");
  }
}
