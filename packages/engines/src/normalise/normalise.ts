import type { Language } from "../languages.ts";
import { RULES, type Currency, type Forms, type LanguageRules } from "./tables.ts";

const SYMBOLS: Record<string, Currency> = { $: "USD", US$: "USD", "€": "EUR", "£": "GBP" };
/** An amount: grouped thousands (1,000 / 1.000 / 1 000) or plain digits, with an optional 1–2 digit fraction. */
const AMOUNT = String.raw`\d{1,3}(?:[,.\u00A0\u202F ]\d{3})+(?:[.,]\d{1,2})?|\d+(?:[.,]\d{1,2})?`;
const NOT_WORD_BEFORE = String.raw`(?<![\p{L}\p{N}_])`;
const NOT_WORD_AFTER = String.raw`(?![\p{L}\p{N}_])`;

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&");
}

const pluralRules = new Map<string, Intl.PluralRules>();
/** Patterns built once per source (the per-language ones from the tables). */
const patterns = new Map<string, RegExp>();
function pattern(source: string, flags = "gu"): RegExp {
  const key = `${flags}/${source}`;
  let compiled = patterns.get(key);
  if (compiled === undefined) {
    compiled = new RegExp(source, flags);
    patterns.set(key, compiled);
  }
  return compiled;
}

function plural(rules: LanguageRules, forms: Forms, n: number): string {
  let select = pluralRules.get(rules.locale);
  if (select === undefined) {
    select = new Intl.PluralRules(rules.locale);
    pluralRules.set(rules.locale, select);
  }
  const category = select.select(n);
  return forms[category] ?? forms.other;
}

/** "1,234.50" / "1.234,50" / "3,20" → integer and optional minor (two digits) parts. */
function splitAmount(raw: string): { major: string; minor: string | undefined } {
  const compact = raw.replace(/[\u00A0\u202F ]/g, "");
  const decimal = /[.,](\d{1,2})$/u.exec(compact);
  const integer = decimal ? compact.slice(0, decimal.index) : compact;
  const minor = decimal?.[1] === undefined ? undefined : decimal[1].padEnd(2, "0");
  return { major: String(Number(integer.replace(/[.,]/g, ""))), minor };
}

function money(rules: LanguageRules, currency: Currency, raw: string): string {
  const { major, minor } = splitAmount(raw);
  const words = rules.currency[currency];
  const unit = (n: string, forms: Forms) => (rules.unitFirst ? `${plural(rules, forms, Number(n))} ${n}` : `${n} ${plural(rules, forms, Number(n))}`);
  const main = unit(major, words.major);
  if (minor === undefined || Number(minor) === 0) return main;
  const cents = String(Number(minor));
  return [main, rules.and, unit(cents, words.minor)].filter((p) => p !== "").join(" ");
}

/** A date from its parts, or undefined when they are not a calendar date. */
function date(rules: LanguageRules, year: string, month: number, day: number): string | undefined {
  if (month < 1 || month > 12 || day < 1 || day > 31) return undefined;
  const name = rules.months[month - 1];
  return name === undefined ? undefined : rules.date(String(day), name, year);
}

/** Abbreviations that end a list, and so often a sentence. */
const LIST_ENDINGS = new Set(["etc.", "usw.", "enz.", "ecc.", "n.k.", "и т. д.", "и т.д.", "и т. п.", "др."]);

/** The word just before `offset` in `text` ("am" in "am 3. Oktober"). */
function wordBefore(text: string, offset: number): string {
  return /(\p{L}+)\s*$/u.exec(text.slice(Math.max(0, offset - 40), offset))?.[1] ?? "";
}

function inflect(rules: LanguageRules, words: string, text: string, offset: number): string {
  return rules.inflect ? rules.inflect(words, wordBefore(text, offset)) : words;
}

type Step = (text: string, rules: LanguageRules, language: Language) => string;

const abbreviations: Step = (text, rules) => {
  const keys = Object.keys(rules.abbreviations).sort((a, b) => b.length - a.length);
  if (keys.length === 0) return text;
  // A key that ends with a letter must not run into a following letter; one ending with "." may end a sentence.
  const matcher = pattern(`${NOT_WORD_BEFORE}(${keys.map(escape).join("|")})(?=$|[\\s,;:!?)\\]"'»”]|(?<=\\.))`, "gu");
  return text.replace(matcher, (match: string, key: string, offset: number, whole: string) => {
    const words = rules.abbreviations[key] ?? match;
    // "etc." at the end of a sentence keeps its full stop; a title before a name ("Dr. Smith") does not.
    const rest = whole.slice(offset + match.length);
    const endsSentence = key.endsWith(".") && (/^\s*(?:$|\n)/u.test(rest) || (LIST_ENDINGS.has(key) && /^\s+\p{Lu}/u.test(rest)));
    return endsSentence ? `${words}.` : words;
  });
};

const groupedThousands: Step = (text, rules) =>
  rules.readsSpacedThousands ? text : text.replace(pattern(`${NOT_WORD_BEFORE}(\\d{1,3}(?:[\\u00A0\\u202F ]\\d{3})+)(?![\\d.,]\\d)${NOT_WORD_AFTER}`, "gu"), (m) => m.replace(/[\u00A0\u202F ]/g, ""));

const dates: Step = (text, rules) =>
  text
    .replace(pattern(`${NOT_WORD_BEFORE}(\\d{4})-(\\d{1,2})-(\\d{1,2})${NOT_WORD_AFTER}`, "gu"), (m, y: string, mo: string, d: string, at: number, whole: string) => {
      const words = date(rules, y, Number(mo), Number(d));
      return words === undefined ? m : inflect(rules, words, whole, at);
    })
    .replace(pattern(`${NOT_WORD_BEFORE}(\\d{1,2})([/.])(\\d{1,2})\\2(\\d{4})${NOT_WORD_AFTER}`, "gu"), (m, a: string, _s: string, b: string, y: string, at: number, whole: string) => {
      const [first, second] = [Number(a), Number(b)];
      const monthFirst = first > 12 ? false : second > 12 ? true : rules.monthFirst === true;
      const words = monthFirst ? date(rules, y, first, second) : date(rules, y, second, first);
      return words === undefined ? m : inflect(rules, words, whole, at);
    });

const times: Step = (text, rules, language) => {
  const withMeridiem = language === "English"
    ? text
    : text.replace(pattern(`${NOT_WORD_BEFORE}(\\d{1,2})(?::(\\d{2}))?\\s?([ap])\\.?\\s?m\\.?(?![\\p{L}])`, "giu"), (m, h: string, mi: string | undefined, ap: string) => {
        const hour = Number(h);
        if (hour < 1 || hour > 12) return m;
        const h24 = (hour % 12) + (ap.toLowerCase() === "p" ? 12 : 0);
        return `${h24}:${mi ?? "00"}`;
      });
  const time = rules.time;
  if (time === undefined) return withMeridiem;
  return withMeridiem.replace(pattern(`${NOT_WORD_BEFORE}(\\d{1,2}):(\\d{2})(?![\\d:])`, "gu"), (m, h: string, mi: string) => {
    const [hour, minute] = [Number(h), Number(mi)];
    return hour > 24 || minute > 59 ? m : time(hour, minute);
  });
};

const currencies: Step = (text, rules) => {
  const symbols = Object.keys(SYMBOLS).sort((a, b) => b.length - a.length).map(escape).join("|");
  return text
    // A symbol right after an amount ("5 € 10") belongs to that amount, not to the number after it.
    .replace(pattern(`(?<!\\d[\\s\\u00A0\\u202F]?)(${symbols})\\s?(${AMOUNT})(?![\\d])`, "gu"), (_m, s: string, amount: string) => money(rules, SYMBOLS[s] ?? "USD", amount))
    .replace(pattern(`${NOT_WORD_BEFORE}(${AMOUNT})[\\s\\u00A0\\u202F]?(${symbols})`, "gu"), (m, amount: string, s: string) => {
      const currency = SYMBOLS[s] ?? "USD";
      return rules.readsAfter?.includes(currency) ? m : money(rules, currency, amount);
    });
};

const percentages: Step = (text, rules) => {
  const { percent, percentBefore } = rules;
  if (percent === undefined && percentBefore === undefined) return text;
  return text.replace(pattern(`${NOT_WORD_BEFORE}(\\d+(?:[.,]\\d+)?)[\\s\\u00A0\\u202F]?%`, "gu"), (_m, n: string) =>
    percentBefore !== undefined ? `${percentBefore}${n}` : `${n} ${percent ?? ""}`.trimEnd(),
  );
};

const units: Step = (text, rules) => {
  const keys = Object.keys(rules.units);
  if (keys.length === 0) return text;
  return text.replace(pattern(`${NOT_WORD_BEFORE}(\\d+(?:[.,]\\d+)?)[\\s\\u00A0]?(${keys.map(escape).join("|")})${NOT_WORD_AFTER}(?!\\.\\w)`, "gu"), (m, n: string, unit: string) => {
    const forms = rules.units[unit];
    if (forms === undefined) return m;
    const integer = /^\d+$/u.test(n) ? Number(n) : 2;
    return `${n} ${plural(rules, forms, integer)}`;
  });
};

const ordinals: Step = (text, rules) => {
  const { ordinal, ordinalPattern } = rules;
  if (ordinal === undefined || ordinalPattern === undefined) return text;
  return text.replace(ordinalPattern, (m: string, ...groups: unknown[]) => {
    const digits = groups.find((g): g is string => typeof g === "string" && /^\d+$/u.test(g));
    const at = groups.find((g): g is number => typeof g === "number") ?? 0;
    const n = Number(digits);
    if (digits === undefined || n < 1 || n > 1_000_000) return m;
    // "2.ª" (Spanish, Portuguese, Italian) is feminine: "segunda", not "segundo".
    const words = m.includes("ª") ? ordinal(n).replace(/o(?=\s|$)/gu, "a") : ordinal(n);
    return inflect(rules, words, text, at);
  });
};

const decimals: Step = (text, rules) => {
  const other = rules.decimal === "." ? "," : ".";
  // "3,5" in English or "3.5" in German: one or two fraction digits only (three would be a thousands group).
  const foreign = pattern(`${NOT_WORD_BEFORE}(\\d+)${escape(other)}(\\d{1,2})(?![\\d]|[.,]\\d)`, "gu");
  let out = text.replace(foreign, (_m, i: string, fr: string) => `${i}${rules.decimal}${fr}`);
  if (rules.decimalWord !== undefined) {
    const word = rules.decimalWord;
    out = out.replace(pattern(`${NOT_WORD_BEFORE}(\\d+)\\.(\\d+)(?![\\d]|\\.\\d)`, "gu"), (_m, i: string, fr: string) => `${i}${word}${fr}`);
  }
  return out;
};

/** Order matters: whole tokens first (abbreviations, dates, times), then money and units, then bare numbers. */
const STEPS: readonly Step[] = [abbreviations, groupedThousands, dates, times, currencies, percentages, units, ordinals, decimals];

/**
 * Rewrites what the offline engines misread in text of `language` (currency, percentages, dates, times,
 * ordinals, decimals with the other separator, grouped thousands, common abbreviations and units) into
 * the words a reader says. Text the engines already read well is returned unchanged.
 */
export function normaliseText(text: string, language: Language): string {
  const rules = RULES[language];
  let out = text;
  for (const step of STEPS) out = step(out, rules, language);
  return out;
}
