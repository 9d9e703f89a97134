import { InvalidArgumentError } from "./errors.ts";

const NAME = /^[A-Za-z0-9_-]+$/;
const TOKEN = /^[^\s.*>]+$/;

export function assertName(kind: string, name: string): void {
  if (!NAME.test(name)) throw new InvalidArgumentError(`${kind} name "${name}" may only contain letters, digits, _ and -`);
}

/** A subject or pattern: dot-separated tokens, `*` for one token, `>` (last) for one or more. */
export function assertSubject(subject: string, { wildcards }: { wildcards: boolean }): void {
  const tokens = subject.split(".");
  tokens.forEach((token, index) => {
    if (wildcards && token === "*") return;
    if (wildcards && token === ">" && index === tokens.length - 1) return;
    if (!TOKEN.test(token)) {
      throw new InvalidArgumentError(`invalid subject "${subject}"${wildcards ? "" : " (no wildcards allowed here)"}`);
    }
  });
}

/** Does the concrete subject match the pattern? */
export function subjectMatches(pattern: string, subject: string): boolean {
  const p = pattern.split(".");
  const s = subject.split(".");
  for (let i = 0; i < p.length; i++) {
    const token = p[i];
    if (token === ">") return s.length > i;
    if (i >= s.length) return false;
    if (token !== "*" && token !== s[i]) return false;
  }
  return p.length === s.length;
}

/** Can some concrete subject match both patterns? */
export function subjectsOverlap(a: string, b: string): boolean {
  const x = a.split(".");
  const y = b.split(".");
  for (let i = 0; ; i++) {
    const tx = x[i];
    const ty = y[i];
    if (tx === undefined || ty === undefined) return tx === ty;
    if (tx === ">") return true;
    if (ty === ">") return true;
    if (tx !== "*" && ty !== "*" && tx !== ty) return false;
  }
}
