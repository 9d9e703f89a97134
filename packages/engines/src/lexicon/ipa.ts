/**
 * IPA → espeak-ng phoneme mnemonics (the `[[…]]` phoneme input of espeak-ng, its docs' "phonemes"
 * page): the common symbols of the voices' phoneme tables. A symbol outside the table makes the whole
 * pronunciation unsayable (null): it is never guessed.
 */
const MULTI: Array<[string, string]> = [
  ["tʃ", "tS"],
  ["t͡ʃ", "tS"],
  ["dʒ", "dZ"],
  ["d͡ʒ", "dZ"],
  ["ts", "ts"],
  ["eɪ", "eI"],
  ["aɪ", "aI"],
  ["ɔɪ", "OI"],
  ["aʊ", "aU"],
  ["oʊ", "oU"],
  ["əʊ", "@U"],
  ["ɪə", "i@"],
  ["eə", "e@"],
  ["ɛə", "e@"],
  ["ʊə", "U@"],
  ["ɑː", "A:"],
  ["ɜː", "3:"],
  ["ɔː", "O:"],
  ["iː", "i:"],
  ["uː", "u:"],
];

const SINGLE: Record<string, string> = {
  p: "p",
  b: "b",
  t: "t",
  d: "d",
  k: "k",
  g: "g",
  "ɡ": "g",
  f: "f",
  v: "v",
  s: "s",
  z: "z",
  h: "h",
  m: "m",
  n: "n",
  l: "l",
  r: "r",
  w: "w",
  j: "j",
  x: "x",
  θ: "T",
  ð: "D",
  ʃ: "S",
  ʒ: "Z",
  ŋ: "N",
  ɹ: "r",
  ɾ: "*",
  ç: "C",
  ɲ: "n^",
  ʎ: "l^",
  ɣ: "Q",
  β: "B",
  ʁ: "R",
  i: "i",
  ɪ: "I",
  e: "e",
  ɛ: "E",
  æ: "a",
  a: "a",
  ɑ: "A",
  ɒ: "0",
  ɔ: "O",
  o: "o",
  ʊ: "U",
  u: "u",
  ʌ: "V",
  ə: "@",
  ɚ: "3",
  ɜ: "3",
  ɐ: "a#",
  y: "y",
  ø: "Y",
  œ: "W",
  ɨ: "i#",
  ˈ: "'",
  ˌ: ",",
  ː: ":",
  ".": "",
  " ": "",
  "\u0361": "",
};

/** The espeak-ng mnemonics of an IPA transcription; null when a symbol is not in the table. */
export function ipaToEspeak(ipa: string): string | null {
  const text = ipa.normalize("NFC").replace(/^[/[]|[/\]]$/g, "");
  let out = "";
  let i = 0;
  outer: while (i < text.length) {
    for (const [from, to] of MULTI) {
      if (text.startsWith(from, i)) {
        out += to;
        i += from.length;
        continue outer;
      }
    }
    const symbol = text.charAt(i);
    const mapped = SINGLE[symbol];
    if (mapped === undefined) return null;
    out += mapped;
    i += 1;
  }
  return out.length > 0 ? out : null;
}
