/**
 * Every relative link of README.md, docs/*.md and the repository's other Markdown files leads somewhere: the file (or folder) exists, and a
 * `#fragment` into a Markdown file names one of its headings, slugged as GitHub slugs them
 * (github-slugger). Links are read with marked's lexer, so code blocks and code spans are not links.
 */
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { mkdir, writeFile } from "node:fs/promises";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import GithubSlugger from "github-slugger";
import { Lexer, walkTokens, type Token } from "marked";
import { describe, expect, it } from "vitest";
import { tempDir } from "@voiceloc/testing";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "..");

/** The plain text of inline tokens, as GitHub renders a heading before slugging it. */
function plainText(tokens: Token[] | undefined): string {
  return (tokens ?? []).map((token) => ("tokens" in token && token.tokens ? plainText(token.tokens) : "text" in token ? String(token.text) : "")).join("");
}

/** The links (and images) of a Markdown text, and the anchors its headings get. */
function readMarkdown(markdown: string): { hrefs: string[]; anchors: Set<string> } {
  const tokens = new Lexer().lex(markdown);
  const hrefs: string[] = [];
  const anchors = new Set<string>();
  const slugger = new GithubSlugger();
  walkTokens(tokens, (token) => {
    if (token.type === "link" || token.type === "image") hrefs.push(token.href);
    if (token.type === "heading") anchors.add(slugger.slug(plainText(token.tokens)));
  });
  return { hrefs, anchors };
}

/** What is wrong with each relative link of the files (paths relative to `root`); empty when nothing is. */
function brokenLinks(root: string, files: string[]): string[] {
  const anchorsOf = new Map<string, Set<string>>();
  const anchors = (path: string): Set<string> => {
    let found = anchorsOf.get(path);
    if (!found) anchorsOf.set(path, (found = readMarkdown(readFileSync(path, "utf8")).anchors));
    return found;
  };
  const problems: string[] = [];
  for (const file of files) {
    const source = join(root, file);
    for (const href of readMarkdown(readFileSync(source, "utf8")).hrefs) {
      if (/^[a-z][a-z0-9+.-]*:/i.test(href) || href.startsWith("//")) continue; // http:, mailto:…: not ours to check
      const [pathPart = "", fragment] = href.split("#", 2);
      const target = pathPart === "" ? source : resolve(dirname(source), decodeURIComponent(pathPart));
      if (!existsSync(target)) {
        problems.push(`${file}: ${href}: no such file ${relative(root, target)}`);
        continue;
      }
      if (fragment === undefined || !target.endsWith(".md") || statSync(target).isDirectory()) continue;
      if (!anchors(target).has(decodeURIComponent(fragment))) problems.push(`${file}: ${href}: ${relative(root, target)} has no heading #${fragment}`);
    }
  }
  return problems;
}

/** The pages of docs/, relative to the repository root. */
function docsPages(): string[] {
  return readdirSync(join(ROOT, "docs"))
    .filter((name) => name.endsWith(".md"))
    .map((name) => `docs/${name}`);
}

/** Every Markdown file of the repository (not in dependencies, build output or test leftovers). */
function markdownFiles(dir = ""): string[] {
  return readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((entry) => {
    const path = dir === "" ? entry.name : `${dir}/${entry.name}`;
    if (entry.isDirectory()) return entry.name.startsWith(".") || ["node_modules", "dist", "test-artifacts", "data", "coverage"].includes(entry.name) ? [] : markdownFiles(path);
    return entry.name.endsWith(".md") ? [path] : [];
  });
}

describe("links of README.md, docs/ and the other Markdown files", () => {
  it("every relative link names a file that exists, and a heading of it when it has a #fragment", () => {
    const files = markdownFiles();
    expect(files).toEqual(expect.arrayContaining(["README.md", "AGENTS.md", ...docsPages()]));
    expect(brokenLinks(ROOT, files)).toEqual([]);
  });

  it("the README links every page of docs/", () => {
    const linked = new Set(readMarkdown(readFileSync(join(ROOT, "README.md"), "utf8")).hrefs.map((href) => href.split("#")[0]));
    const unlinked = docsPages().filter((file) => !linked.has(file));
    expect(unlinked).toEqual([]);
  });

  it("finds what is broken: a missing file, a missing heading here or in another page; code is no link", async () => {
    const dir = await tempDir("voiceloc-docs-links-");
    try {
      await mkdir(join(dir.path, "docs"));
      await writeFile(
        join(dir.path, "README.md"),
        [
          "# Set up",
          "## HTTP reads: `pnpm bench`",
          "[ok](#set-up) [ok](#http-reads-pnpm-bench) [ok](docs/b.md#the-store-embedded-sqlite-or-mongodb) [ok](docs/) [web](https://example.com/x.md#y)",
          "[missing](#nowhere) [gone](docs/c.md) [no heading](docs/b.md#lifecycle) ![gone](docs/images/x.png)",
          "`[not a link](nowhere.md)`",
          "```",
          "[not a link either](nowhere.md)",
          "```",
        ].join("\n"),
      );
      await writeFile(join(dir.path, "docs", "b.md"), "# Operations\n\n## The store: embedded SQLite or MongoDB\n\n[back](../README.md#set-up)\n");
      expect(brokenLinks(dir.path, ["README.md", "docs/b.md"])).toEqual([
        "README.md: #nowhere: README.md has no heading #nowhere",
        "README.md: docs/c.md: no such file docs/c.md",
        "README.md: docs/b.md#lifecycle: docs/b.md has no heading #lifecycle",
        "README.md: docs/images/x.png: no such file docs/images/x.png",
      ]);
    } finally {
      await dir.cleanup();
    }
  });
});
