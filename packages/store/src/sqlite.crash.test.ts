/**
 * Durability: a child process writes to the embedded store in a tight loop
 * and is killed with SIGKILL while writing. Every write it reported as
 * committed must be there, whole, when the store is opened again, and the
 * database must pass SQLite's integrity check.
 */
import { spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { EMBEDDED_DB_FILENAME, openEmbeddedStore } from "./sqlite.ts";
import { crashDoc, crashDocId } from "./testing/crash-doc.ts";
import type { CrashDoc } from "./testing/crash-doc.ts";

const PACKAGE_DIR = fileURLToPath(new URL("..", import.meta.url));
const WRITER = fileURLToPath(new URL("./testing/crash-writer.ts", import.meta.url));

interface Reported {
  inserted: Set<number>;
  updated: Map<number, number>;
  lines: number;
}

/** Runs the writer until it has reported `commits` writes, then SIGKILLs it and reads what it said. */
function runAndKill(dir: string, commits: number): Promise<Reported> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["--import", "tsx", WRITER, dir], {
      cwd: PACKAGE_DIR,
      stdio: ["ignore", "pipe", "pipe"],
    });
    const reported: Reported = { inserted: new Set(), updated: new Map(), lines: 0 };
    let stderr = "";
    let killed = false;
    child.stderr.setEncoding("utf8");
    child.stderr.on("data", (chunk: string) => {
      stderr += chunk;
    });
    const lines = createInterface({ input: child.stdout });
    lines.on("line", (line) => {
      const [kind, a, b] = line.split(" ");
      if (kind === "inserted") {
        reported.inserted.add(Number(a));
      } else if (kind === "inserted-many") {
        for (let n = Number(a); n <= Number(b); n++) reported.inserted.add(n);
      } else if (kind === "updated") {
        const n = Number(a);
        reported.updated.set(n, Math.max(reported.updated.get(n) ?? 0, Number(b)));
      } else if (kind !== "ready") {
        return;
      }
      reported.lines++;
      if (!killed && reported.lines >= commits) {
        killed = true;
        child.kill("SIGKILL");
      }
    });
    child.on("error", reject);
    child.on("close", (code, signal) => {
      if (signal !== "SIGKILL") {
        reject(new Error(`writer ended by itself (code ${code}, signal ${signal}): ${stderr}`));
        return;
      }
      resolve(reported);
    });
  });
}

describe("embedded store durability", () => {
  it("keeps every committed write across SIGKILL mid-write, and stays consistent", { timeout: 180_000 }, async () => {
    // Growing runs, so that later ones also cross WAL checkpoints.
    for (const commits of [150, 600, 1500, 3000]) {
      const dir = await mkdtemp(join(tmpdir(), "voiceloc-crash-"));
      try {
        const reported = await runAndKill(dir, commits);
        expect(reported.inserted.size).toBeGreaterThan(100);

        const raw = new Database(join(dir, EMBEDDED_DB_FILENAME));
        expect(raw.pragma("integrity_check", { simple: true })).toBe("ok");
        raw.close();

        const store = await openEmbeddedStore({ dir });
        try {
          const col = await store.collection<CrashDoc>({ name: "crash" });
          for (const n of reported.inserted) {
            const doc = await col.get(crashDocId(n));
            expect(doc, `document ${n} was reported committed`).not.toBeNull();
            const { seq, ...rest } = doc as CrashDoc;
            const { seq: _seq, ...expected } = crashDoc(n);
            expect(rest).toEqual(expected);
            expect(seq).toBeGreaterThanOrEqual(reported.updated.get(n) ?? 0);
          }
          expect(await col.count({})).toBeGreaterThanOrEqual(reported.inserted.size);
          // Still writable after recovery.
          await col.insert(crashDoc(10_000_000));
          expect(await col.get(crashDocId(10_000_000))).toEqual(crashDoc(10_000_000));
          expect(store.db.pragma("integrity_check", { simple: true })).toBe("ok");
        } finally {
          await store.close();
        }
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    }
  });
});
