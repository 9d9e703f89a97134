/** The document the crash writer stores for sequence number `n`; the test recomputes it to check content. */
export interface CrashDoc {
  id: string;
  n: number;
  seq: number;
  text: string;
  nested: { list: number[]; deep: { pad: string; ok: boolean } };
}

export function crashDocId(n: number): string {
  return `doc-${String(n).padStart(7, "0")}`;
}

export function crashDoc(n: number): CrashDoc {
  return {
    id: crashDocId(n),
    n,
    seq: 0,
    text: `payload ${n} — ünïcödé 日本語 🎙️`,
    nested: { list: [n, n * 2, n * 3], deep: { pad: "x".repeat(200 + (n % 700)), ok: n % 2 === 0 } },
  };
}
