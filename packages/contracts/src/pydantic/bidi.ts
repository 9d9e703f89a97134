/**
 * The RFC 5893 "Bidi rule" that UTS #46 `CheckBidi` applies to a domain containing a
 * right-to-left label. The `url` crate (through `idna`) enforces it, Node's WHATWG `URL` does not
 * (`http://٣.com` parses in Node, fails in Pydantic with "invalid international domain name").
 *
 * JS regular expressions cannot query Bidi_Class, so classes are approximated from scripts and
 * general categories; this is exact for the characters IDNA lets through in practice (letters,
 * marks, digits, hyphen).
 */
type BidiClass = "L" | "R" | "AN" | "EN" | "NSM" | "ES" | "ON";

const RTL_SCRIPT =
  /[\p{Script=Hebrew}\p{Script=Arabic}\p{Script=Syriac}\p{Script=Thaana}\p{Script=Nko}\p{Script=Samaritan}\p{Script=Mandaic}\p{Script=Adlam}\p{Script=Mende_Kikakui}\p{Script=Hanifi_Rohingya}\p{Script=Yezidi}\p{Script=Old_South_Arabian}\p{Script=Old_North_Arabian}\p{Script=Imperial_Aramaic}\p{Script=Phoenician}\p{Script=Kharoshthi}\p{Script=Avestan}\p{Script=Nabataean}\p{Script=Palmyrene}\p{Script=Manichaean}\p{Script=Psalter_Pahlavi}\p{Script=Inscriptional_Pahlavi}\p{Script=Inscriptional_Parthian}\p{Script=Old_Hungarian}\p{Script=Old_Sogdian}\p{Script=Sogdian}\p{Script=Elymaic}\p{Script=Chorasmian}\p{Script=Hatran}\p{Script=Lydian}\p{Script=Cypriot}\p{Script=Meroitic_Cursive}\p{Script=Meroitic_Hieroglyphs}\p{Script=Old_Turkic}\p{Script=Old_Uyghur}]/u;
const ARABIC_NUMBER = /[\u0600-\u0605\u0660-\u0669\u066b\u066c\u06dd\u0890\u0891\u08e2\u{10d30}-\u{10d39}\u{10e60}-\u{10e7e}]/u;
const EUROPEAN_NUMBER = /[0-9\u00b2\u00b3\u00b9\u06f0-\u06f9\u2070\u2074-\u2079\u2080-\u2089\uff10-\uff19]/u;
const NON_SPACING = /[\p{Mn}\p{Me}]/u;
const LETTER_LIKE = /[\p{L}\p{Mc}\p{Nd}\p{Nl}\p{No}]/u;

function bidiClass(ch: string): BidiClass {
  if (ARABIC_NUMBER.test(ch)) return "AN";
  if (EUROPEAN_NUMBER.test(ch)) return "EN";
  if (NON_SPACING.test(ch)) return "NSM";
  if (ch === "-") return "ES";
  if (LETTER_LIKE.test(ch)) return RTL_SCRIPT.test(ch) ? "R" : "L";
  return "ON";
}

function labelOk(label: string): boolean {
  const classes = [...label].map(bidiClass);
  const first = classes[0];
  let end = classes.length - 1;
  while (end >= 0 && classes[end] === "NSM") end--;
  const last = classes[end];
  if (first === "R") {
    if (classes.includes("L")) return false;
    if (last !== "R" && last !== "EN" && last !== "AN") return false;
    return !(classes.includes("EN") && classes.includes("AN"));
  }
  if (first === "L") {
    if (classes.includes("R") || classes.includes("AN")) return false;
    return last === "L" || last === "EN";
  }
  return false;
}

/** True when `domain` (Unicode labels) is a Bidi domain name with a label breaking the rule. */
export function violatesBidiRule(domain: string): boolean {
  const labels = domain.split(".").filter((label) => label !== "");
  const isBidi = labels.some((label) => [...label].some((ch) => {
    const c = bidiClass(ch);
    return c === "R" || c === "AN";
  }));
  return isBidi && !labels.every(labelOk);
}
