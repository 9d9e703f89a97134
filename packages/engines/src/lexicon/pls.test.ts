import { describe, expect, it } from "vitest";
import { applyLexicons, LexiconNotSpeakableError, type LexiconForSpeech } from "./apply.ts";
import { ipaToEspeak } from "./ipa.ts";
import { LexiconError, parsePls, PLS_LIMITS } from "./pls.ts";

const NS = "http://www.w3.org/2005/01/pronunciation-lexicon";
const pls = (body: string, lang = "en-US") => `<?xml version="1.0" encoding="UTF-8"?>\n<lexicon version="1.0" xmlns="${NS}" alphabet="ipa" xml:lang="${lang}">\n${body}\n</lexicon>`;

function refused(xml: string): LexiconError {
  try {
    parsePls(xml);
  } catch (error) {
    expect(error).toBeInstanceOf(LexiconError);
    return error as LexiconError;
  }
  throw new Error("the document was accepted");
}

describe("PLS parsing", () => {
  it("reads lexemes with several graphemes, an alias and an IPA phoneme", () => {
    const parsed = parsePls(
      pls(`<lexeme><grapheme>Zxqv</grapheme><grapheme>ZXQV</grapheme><alias>lighthouse</alias></lexeme>
<lexeme><grapheme>tomato</grapheme><phoneme>təˈmɑːtoʊ</phoneme></lexeme>
<lexeme><grapheme>W3C</grapheme><alias>World Wide Web Consortium</alias><phoneme alphabet="x-sampa">dVb@l</phoneme></lexeme>`),
    );
    expect(parsed.xmlLang).toBe("en-US");
    expect(parsed.entries).toEqual([
      { graphemes: ["Zxqv", "ZXQV"], alias: "lighthouse", phoneme: null, alphabet: null },
      { graphemes: ["tomato"], alias: null, phoneme: "təˈmɑːtoʊ", alphabet: "ipa" },
      { graphemes: ["W3C"], alias: "World Wide Web Consortium", phoneme: "dVb@l", alphabet: "x-sampa" },
    ]);
  });

  it("names the line where malformed XML stops", () => {
    const error = refused(pls(`<lexeme><grapheme>a</grapheme>\n<alias>b</alias></lexem>`));
    expect(error.line).toBe(4);
    expect(error.message).toMatch(/^line 4: /);
  });

  it("never reads an external entity: a DOCTYPE is refused and nothing of /etc/passwd appears", () => {
    const xml = `<?xml version="1.0"?>\n<!DOCTYPE lexicon [<!ENTITY x SYSTEM "file:///etc/passwd">]>\n<lexicon version="1.0" xmlns="${NS}" alphabet="ipa" xml:lang="en"><lexeme><grapheme>a</grapheme><alias>&x;</alias></lexeme></lexicon>`;
    const error = refused(xml);
    expect(error.message).toMatch(/DOCTYPE/);
    expect(error.message).not.toMatch(/root:/);
  });

  it("refuses a billion-laughs payload at once", () => {
    const defs = ['<!ENTITY lol "lol">'];
    for (let i = 1; i <= 9; i++) defs.push(`<!ENTITY lol${i} "${`&lol${i === 1 ? "" : i - 1};`.repeat(10)}">`);
    const xml = `<?xml version="1.0"?>\n<!DOCTYPE lexicon [${defs.join("")}]>\n<lexicon version="1.0" xmlns="${NS}" alphabet="ipa" xml:lang="en"><lexeme><grapheme>a</grapheme><alias>&lol9;</alias></lexeme></lexicon>`;
    const started = Date.now();
    refused(xml);
    // the same entity without its DTD is an undefined entity, not an expansion
    expect(refused(pls(`<lexeme><grapheme>a</grapheme><alias>&lol9;</alias></lexeme>`)).message).toMatch(/undefined entity/);
    expect(Date.now() - started).toBeLessThan(2_000);
  });

  it("bounds the size and the number of entries", () => {
    expect(refused(pls(`<lexeme><grapheme>a</grapheme><alias>${"b".repeat(PLS_LIMITS.maxChars)}</alias></lexeme>`)).message).toMatch(/characters long/);
    const many = Array.from({ length: PLS_LIMITS.maxEntries + 1 }, (_, i) => `<lexeme><grapheme>${i.toString(36)}</grapheme><alias>x</alias></lexeme>`).join("");
    expect(refused(pls(many)).message).toMatch(/more than 5000 lexemes/);
  });

  it("refuses what is not a PLS lexicon, in plain words", () => {
    expect(refused(`<lexicon xml:lang="en" alphabet="ipa"><lexeme/></lexicon>`).message).toMatch(/root element must be <lexicon xmlns=/);
    expect(refused(`<lexicon xmlns="${NS}" alphabet="ipa"></lexicon>`).message).toMatch(/xml:lang/);
    expect(refused(pls(`<lexeme><alias>b</alias></lexeme>`)).message).toMatch(/no <grapheme>/);
    expect(refused(pls(`<lexeme><grapheme>a</grapheme></lexeme>`)).message).toMatch(/neither <alias> nor <phoneme>/);
    expect(refused(pls(``)).message).toMatch(/no <lexeme>/);
    expect(refused("not xml at all").message).toMatch(/^line 1: /);
  });
});

const lexicon = (entries: LexiconForSpeech["entries"], name = "names"): LexiconForSpeech => ({ id: "l1", name, entries });

describe("applying lexicons", () => {
  const names = lexicon([
    { graphemes: ["Zxqv"], alias: "lighthouse", phoneme: null, alphabet: null },
    { graphemes: ["nyc", "N.Y.C."], alias: "New York City", phoneme: null, alphabet: null },
    { graphemes: ["tomato"], alias: "tomahto", phoneme: "təˈmɑːtoʊ", alphabet: "ipa" },
  ]);

  it("replaces whole words only, longest first, in one pass", () => {
    expect(applyLexicons("Zxqv and Zxqvs near nyc, N.Y.C. and Nyc.", [names], { language: "English", phonemes: "none" })).toBe(
      "lighthouse and Zxqvs near New York City, New York City and New York City.",
    );
    // a replacement is not replaced again
    const loop = lexicon([
      { graphemes: ["a"], alias: "b", phoneme: null, alphabet: null },
      { graphemes: ["b"], alias: "a", phoneme: null, alphabet: null },
    ]);
    expect(applyLexicons("a b", [loop], { language: "English", phonemes: "none" })).toBe("b a");
  });

  it("matches as written, and a lower-case grapheme also capitalised; ZXQV is not Zxqv", () => {
    expect(applyLexicons("ZXQV, Zxqv; Tomato", [names], { language: "English", phonemes: "none" })).toBe("ZXQV, lighthouse; tomahto");
  });

  it("gives espeak-ng voices the IPA as phoneme input and others the alias", () => {
    expect(applyLexicons("a tomato.", [names], { language: "English", phonemes: "espeak" })).toBe("a [[t@'mA:toU]] .");
    expect(applyLexicons("a tomato.", [names], { language: "English", phonemes: "none" })).toBe("a tomahto.");
  });

  it("names the entries a voice cannot say", () => {
    const only = lexicon([{ graphemes: ["Nguyen"], alias: null, phoneme: "ŋwiən", alphabet: "ipa" }], "people");
    expect(() => applyLexicons("x", [only], { language: "English", phonemes: "none" })).toThrow(LexiconNotSpeakableError);
    expect(() => applyLexicons("x", [only], { language: "English", phonemes: "none" })).toThrow(/'Nguyen' \(lexicon 'people'\).*takes no phonemes/);
    expect(applyLexicons("Mr Nguyen", [only], { language: "English", phonemes: "espeak" })).toBe("Mr [[Nwi@n]] ");
    const strange = lexicon([{ graphemes: ["Qx"], alias: null, phoneme: "ʘ", alphabet: "ipa" }]);
    expect(() => applyLexicons("Qx", [strange], { language: "English", phonemes: "espeak" })).toThrow(/'Qx'.*no phoneme for/);
  });

  it("matches inside Chinese text, which has no spaces between words", () => {
    const zh = lexicon([{ graphemes: ["北京"], alias: "北平", phoneme: null, alphabet: null }]);
    expect(applyLexicons("我在北京工作", [zh], { language: "Chinese", phonemes: "none" })).toBe("我在北平工作");
  });

  it("converts IPA to espeak-ng mnemonics and refuses unknown symbols", () => {
    expect(ipaToEspeak("/ˈθɪŋkɪŋ/")).toBe("'TINkIN");
    expect(ipaToEspeak("dʒʌdʒ")).toBe("dZVdZ");
    expect(ipaToEspeak("ʘa")).toBeNull();
  });
});
