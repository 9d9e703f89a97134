/**
 * The served /openapi.json through the two linters API consumers run: Redocly CLI (`recommended-strict`
 * plus our style rules) and Spectral (`spectral:oas` plus our style rules), both with 0 errors and 0
 * warnings. The rule sets and their commented exceptions live in ../openapi-lint/. Both CLIs run
 * offline: Redocly's telemetry and update check are off, Spectral's rule set is bundled.
 *
 * The same run lints a deliberately broken copy of the document, so a linter that silently checks
 * nothing (a wrong path, an ignored rule set) fails this test too.
 */
import { spawn } from "node:child_process";
import { cp, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { tempDir } from "@voiceloc/testing";
import { startTestGateway } from "./testing/harness.ts";

const gatewayDir = join(dirname(fileURLToPath(import.meta.url)), "..");
const REDOCLY = join(gatewayDir, "node_modules", "@redocly", "cli", "bin", "cli.js");
const SPECTRAL = join(gatewayDir, "node_modules", "@stoplight", "spectral-cli", "dist", "index.js");

/** Env of the linters: no telemetry, no update checks, no colours in their output. */
const QUIET_ENV = {
  ...process.env,
  REDOCLY_TELEMETRY: "off",
  REDOCLY_SUPPRESS_UPDATE_NOTICE: "true",
  NO_UPDATE_NOTIFIER: "1",
  DO_NOT_TRACK: "1",
  NO_COLOR: "1",
  FORCE_COLOR: "0",
  CI: "true",
};

let dir: { path: string; cleanup: () => Promise<void> };

function run(script: string, args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [script, ...args], { cwd: dir.path, env: QUIET_ENV, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout, stderr }));
  });
}

/** The served document with one break of each rule our style adds (see AGENTS.md, "New operations"). */
function broken(doc: any): any {
  const copy = structuredClone(doc);
  const create = copy.paths["/v1/voices/streams"].post;
  delete create.requestBody.content["application/json"].example;
  create.operationId = "createVoiceStream";
  delete create.summary;
  delete copy.paths["/v1/audio_books/{audio_book_id}"].get.description;
  delete copy.paths["/v1/audio_books/{audio_book_id}"].get.parameters[0].description;
  const voices = copy.paths["/v1/voices"].get;
  voices.responses = Object.fromEntries(Object.entries(voices.responses).filter(([code]) => !code.startsWith("4")));
  delete copy.info.contact;
  copy.paths["/v1/extra/"] = { get: { ...copy.paths["/v1/capabilities"].get, operationId: "get_extra" } };
  return copy;
}

beforeAll(async () => {
  dir = await tempDir("voiceloc-openapi-lint-");
  const t = await startTestGateway({ PUBLIC_BASE_URL: "https://api.voiceloc.test" });
  const doc = await (await t.request("GET", "/openapi.json", { key: null })).json();
  await t.close();
  await cp(join(gatewayDir, "openapi-lint"), dir.path, { recursive: true });
  await writeFile(join(dir.path, "openapi.json"), JSON.stringify(doc, null, 2));
  await writeFile(join(dir.path, "broken.json"), JSON.stringify(broken(doc), null, 2));
});

afterAll(async () => {
  await dir?.cleanup();
});

interface RedoclyProblem {
  ruleId: string;
  severity: string;
  message: string;
  location: Array<{ source: { ref: string }; pointer: string }>;
}

describe("the served OpenAPI document passes the linters", () => {
  it("Redocly CLI (recommended-strict + our rules): 0 errors, 0 warnings; only the contract's trailing slash is excepted", async () => {
    // one run per document: with several, redocly prints one JSON report after another
    const lint = async (file: string) => {
      const { stdout, stderr } = await run(REDOCLY, ["lint", file, "--config", "redocly.yaml", "--format=json"]);
      try {
        return JSON.parse(stdout.slice(stdout.indexOf("{"))) as { totals: { errors: number; warnings: number; ignored: number }; problems: RedoclyProblem[] };
      } catch {
        throw new Error(`redocly printed no JSON report for ${file}:\n${stdout}\n${stderr}`);
      }
    };
    const served = await lint("openapi.json");
    expect(served.problems.map((p) => `${p.severity} ${p.ruleId} ${p.location[0]?.pointer}: ${p.message}`)).toEqual([]);
    expect(served.totals).toEqual({ errors: 0, warnings: 0, ignored: 1 });
    // the broken copy trips each rule; the exception file names the served document's `/v1/audio_books/` only
    const bad = await lint("broken.json");
    const rules = new Set(bad.problems.map((p) => p.ruleId));
    for (const rule of ["operation-summary", "operation-description", "parameter-description", "operation-4xx-response", "info-contact", "no-path-trailing-slash"]) {
      expect(rules, rule).toContain(rule);
    }
    expect(bad.problems.filter((p) => p.ruleId === "no-path-trailing-slash").map((p) => p.location[0]?.pointer).sort()).toEqual([
      "#/paths/~1v1~1audio_books~1",
      "#/paths/~1v1~1extra~1",
    ]);
  }, 180_000);

  it("Spectral (spectral:oas + our rules): 0 errors, 0 warnings, 0 infos, 0 hints", async () => {
    const { stdout, stderr } = await run(SPECTRAL, ["lint", "openapi.json", "broken.json", "--ruleset", "spectral.yaml", "--format", "json", "--fail-severity", "hint", "--quiet"]);
    let results: Array<{ code: string; message: string; severity: number; path: string[]; source: string }>;
    try {
      results = JSON.parse(stdout.slice(stdout.indexOf("[")));
    } catch {
      throw new Error(`spectral printed no JSON report:\n${stdout}\n${stderr}`);
    }
    const served = results.filter((r) => r.source.endsWith("openapi.json")).map((r) => `${r.severity} ${r.code} ${r.path.join(".")}: ${r.message}`);
    expect(served).toEqual([]);
    const rules = new Set(results.filter((r) => r.source.endsWith("broken.json")).map((r) => r.code));
    for (const rule of [
      "voiceloc-operation-id-snake-case",
      "voiceloc-operation-summary",
      "voiceloc-operation-4xx",
      "voiceloc-json-request-example",
      "oas3-parameter-description",
      "operation-description",
      "info-contact",
      "path-keys-no-trailing-slash",
    ]) {
      expect(rules, rule).toContain(rule);
    }
  }, 180_000);
});
