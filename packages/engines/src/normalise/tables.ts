/**
 * Per-language rules for what the offline engines read wrongly (measured with `espeak-ng -q -x`, flite
 * `-ps` and festival's Word relation; findings in docs/tasks.md#text-normalisation). Only constructs an
 * engine misreads are rewritten: plain cardinals, years and the forms each engine already reads well stay
 * as written. Number words come from n2words (MIT); the words around them are these tables.
 */
import * as de from "n2words/de-DE";
import * as en from "n2words/en-US";
import * as es from "n2words/es-ES";
import * as fr from "n2words/fr-FR";
import * as nl from "n2words/nl-NL";
import * as ru from "n2words/ru-RU";
import type { Language } from "../languages.ts";

/** A word by plural category (Intl.PluralRules of the language); `other` is the fallback. */
export type Forms = Partial<Record<Intl.LDMLPluralRule, string>> & { other: string };
export type Currency = "USD" | "EUR" | "GBP";

export interface LanguageRules {
  /** BCP 47 tag for Intl.PluralRules. */
  locale: string;
  /** The language's decimal separator, and how a decimal is written for its engine ("3,5", "3点5"). */
  decimal: "." | ",";
  /** When set, decimals are written `<int><decimalWord><fraction>` (the engine drops the separator). */
  decimalWord?: string;
  /** Ordinal words (n2words), where the language writes ordinals with digits. */
  ordinal?: (n: number) => string;
  /** Declines an ordinal by the word before it (German "am dritten", "der dritte"). */
  inflect?: (ordinal: string, wordBefore: string) => string;
  /** Ordinal numerals of the language: group 1 is the number. */
  ordinalPattern?: RegExp;
  /** Word(s) for "%" after the number, where the engine drops or anglicises it. */
  percent?: string;
  /** Word(s) for "%" before the number (Chinese 百分之50). */
  percentBefore?: string;
  /** Currency words: major and minor units, and whether the unit goes before the amount. */
  currency: Record<Currency, { major: Forms; minor: Forms }>;
  unitFirst?: boolean;
  /** Currencies whose symbol after the amount ("5 €") the engine reads well: left as written. */
  readsAfter?: readonly Currency[];
  /** The engine reads thousands grouped with spaces ("1 000 000" as one million): left as written. */
  readsSpacedThousands?: boolean;
  /** Joins major and minor amounts ("3 pounds and 20 pence"). */
  and: string;
  /** Month names, January first. */
  months: readonly string[];
  /** A date from day, month name and year. */
  date: (day: string, month: string, year: string) => string;
  /** Numeric dates with two small parts: month first (US English) or day first. */
  monthFirst?: boolean;
  /** A time of day from 24-hour hour and minute (digits); undefined keeps "14:30" (the engine reads it). */
  time?: (hour: number, minute: number) => string;
  /** Abbreviations as written (with their dots) → words. Matched as whole tokens. */
  abbreviations: Record<string, string>;
  /** Unit symbols after a number → words (singular/plural by the number). */
  units: Record<string, Forms>;
}

const f = (other: string, one?: string, few?: string, many?: string): Forms => ({ other, ...(one ? { one } : {}), ...(few ? { few } : {}), ...(many ? { many } : {}) });
const latinMonths = {
  en: ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"],
  fr: ["janvier", "février", "mars", "avril", "mai", "juin", "juillet", "août", "septembre", "octobre", "novembre", "décembre"],
  de: ["Januar", "Februar", "März", "April", "Mai", "Juni", "Juli", "August", "September", "Oktober", "November", "Dezember"],
  es: ["enero", "febrero", "marzo", "abril", "mayo", "junio", "julio", "agosto", "septiembre", "octubre", "noviembre", "diciembre"],
  it: ["gennaio", "febbraio", "marzo", "aprile", "maggio", "giugno", "luglio", "agosto", "settembre", "ottobre", "novembre", "dicembre"],
  pt: ["janeiro", "fevereiro", "março", "abril", "maio", "junho", "julho", "agosto", "setembro", "outubro", "novembro", "dezembro"],
  nl: ["januari", "februari", "maart", "april", "mei", "juni", "juli", "augustus", "september", "oktober", "november", "december"],
  sw: ["Januari", "Februari", "Machi", "Aprili", "Mei", "Juni", "Julai", "Agosti", "Septemba", "Oktoba", "Novemba", "Desemba"],
};
const num = (n: string) => String(Number(n));
const ord = (fn: (v: number) => string) => (n: number) => fn(n);

export const RULES: Record<Language, LanguageRules> = {
  English: {
    locale: "en",
    decimal: ".",
    // "1st", "21st", "103rd" are read as ordinals by espeak-ng, flite and festival: no ordinal rule.
    currency: {
      USD: { major: f("dollars", "dollar"), minor: f("cents", "cent") },
      EUR: { major: f("euros", "euro"), minor: f("cents", "cent") },
      GBP: { major: f("pounds", "pound"), minor: f("pence", "penny") },
    },
    and: "and",
    months: latinMonths.en,
    date: (d, m, y) => `${m} ${en.toOrdinal(Number(d))}, ${y}`,
    monthFirst: true,
    abbreviations: { "e.g.": "for example", "i.e.": "that is", "etc.": "et cetera", "Dr.": "Doctor", "vs.": "versus", "approx.": "approximately" },
    units: { km: f("kilometres", "kilometre"), kg: f("kilograms", "kilogram"), cm: f("centimetres", "centimetre"), mm: f("millimetres", "millimetre") },
  },
  French: {
    locale: "fr",
    readsSpacedThousands: true,
    readsAfter: ["EUR"],
    decimal: ",",
    ordinal: (n) => (n === 1 ? "premier" : fr.toOrdinal(n)),
    // "1er" is read "premier"; "1re", "2e", "3ème" are not.
    ordinalPattern: /\b(\d+)(?:re|ère|e|ème|è)\b/gu,
    currency: {
      USD: { major: f("dollars", "dollar"), minor: f("cents", "cent") },
      EUR: { major: f("euros", "euro"), minor: f("centimes", "centime") },
      GBP: { major: f("livres", "livre"), minor: f("pence", "penny") },
    },
    and: "et",
    months: latinMonths.fr,
    date: (d, m, y) => `${d === "1" ? "premier" : d} ${m} ${y}`,
    abbreviations: { "M.": "Monsieur", "MM.": "Messieurs", "Mme": "Madame", "Mlle": "Mademoiselle", "p. ex.": "par exemple", "c.-à-d.": "c'est-à-dire", "Dr": "Docteur" },
    units: {},
  },
  German: {
    locale: "de",
    readsSpacedThousands: true,
    readsAfter: ["EUR"],
    decimal: ",",
    ordinal: ord(de.toOrdinal),
    // "3." is an ordinal before a month or after an article or preposition ("am 3. Oktober", "der 2. Platz").
    ordinalPattern: /(?<=\b(?:der|die|das|dem|den|des|am|im|zum|zur|vom|beim|ab)\s)(\d{1,3})\.(?=\s)|\b(\d{1,2})\.(?=\s(?:Januar|Februar|März|April|Mai|Juni|Juli|August|September|Oktober|November|Dezember)\b)/gu,
    currency: {
      USD: { major: f("Dollar"), minor: f("Cent") },
      EUR: { major: f("Euro"), minor: f("Cent") },
      GBP: { major: f("Pfund"), minor: f("Pence") },
    },
    and: "und",
    months: latinMonths.de,
    date: (d, m, y) => `${de.toOrdinal(Number(d))} ${m} ${y}`,
    inflect: (ordinal, before) => (/^(?:am|im|zum|vom|beim|dem|den|des|ab|bis|seit)$/iu.test(before) ? `${ordinal.replace(/(\S+)/u, "$1n")}` : ordinal),
    abbreviations: { "z. B.": "zum Beispiel", "z.B.": "zum Beispiel", "usw.": "und so weiter", "bzw.": "beziehungsweise", "d. h.": "das heißt", "d.h.": "das heißt", "Dr.": "Doktor", "Hr.": "Herr", "Fr.": "Frau", "ca.": "circa", "etc.": "et cetera" },
    units: { km: f("Kilometer"), kg: f("Kilogramm"), cm: f("Zentimeter"), mm: f("Millimeter") },
  },
  Spanish: {
    locale: "es",
    readsAfter: ["EUR"],
    decimal: ",",
    ordinal: ord(es.toOrdinal),
    // "1º" / "2ª" are read "primero" / "segunda"; "1.º" is read "uno punto o".
    ordinalPattern: /\b(\d+)\.[ºª](?!\w)/gu,
    currency: {
      USD: { major: f("dólares", "dólar"), minor: f("centavos", "centavo") },
      EUR: { major: f("euros", "euro"), minor: f("céntimos", "céntimo") },
      GBP: { major: f("libras", "libra"), minor: f("peniques", "penique") },
    },
    and: "con",
    months: latinMonths.es,
    date: (d, m, y) => `${num(d)} de ${m} de ${y}`,
    abbreviations: { "etc.": "etcétera", "p. ej.": "por ejemplo" },
    units: { km: f("kilómetros", "kilómetro"), cm: f("centímetros", "centímetro") },
  },
  Italian: {
    locale: "it",
    readsAfter: ["EUR"],
    decimal: ",",
    // espeak-ng reads "1º" / "1ª" as "primo" / "prima" already.
    currency: {
      USD: { major: f("dollari", "dollaro"), minor: f("centesimi", "centesimo") },
      EUR: { major: f("euro"), minor: f("centesimi", "centesimo") },
      GBP: { major: f("sterline", "sterlina"), minor: f("penny") },
    },
    and: "e",
    months: latinMonths.it,
    date: (d, m, y) => `${d === "1" ? "primo" : num(d)} ${m} ${y}`,
    abbreviations: { "ecc.": "eccetera", "etc.": "eccetera", "Sig.": "signor", "Sig.ra": "signora", "Dott.": "dottor", "Dott.ssa": "dottoressa", "p. es.": "per esempio" },
    units: { km: f("chilometri", "chilometro"), kg: f("chili", "chilo"), cm: f("centimetri", "centimetro") },
  },
  Portuguese: {
    locale: "pt",
    readsAfter: ["EUR"],
    decimal: ",",
    // "1º" / "2ª" are read "primeiro" / "segunda" already.
    currency: {
      USD: { major: f("dólares", "dólar"), minor: f("cêntimos", "cêntimo") },
      EUR: { major: f("euros", "euro"), minor: f("cêntimos", "cêntimo") },
      GBP: { major: f("libras", "libra"), minor: f("pence") },
    },
    and: "e",
    months: latinMonths.pt,
    date: (d, m, y) => `${num(d)} de ${m} de ${y}`,
    abbreviations: { "Sr.": "senhor", "Sra.": "senhora", "p. ex.": "por exemplo", "etc.": "etcétera" },
    units: { km: f("quilómetros", "quilómetro"), kg: f("quilos", "quilo"), cm: f("centímetros", "centímetro") },
  },
  Dutch: {
    locale: "nl",
    readsSpacedThousands: true,
    decimal: ",",
    ordinal: ord(nl.toOrdinal),
    ordinalPattern: /\b(\d+)(?:e|ste|de)\b/gu,
    currency: {
      USD: { major: f("dollar"), minor: f("cent") },
      EUR: { major: f("euro"), minor: f("cent") },
      GBP: { major: f("pond"), minor: f("pence") },
    },
    and: "en",
    months: latinMonths.nl,
    date: (d, m, y) => `${num(d)} ${m} ${y}`,
    abbreviations: { "bijv.": "bijvoorbeeld", "enz.": "enzovoort", "dhr.": "de heer", "mevr.": "mevrouw", "Dr.": "dokter", "d.w.z.": "dat wil zeggen", "o.a.": "onder andere", "etc.": "et cetera" },
    units: { km: f("kilometer"), kg: f("kilo"), cm: f("centimeter") },
  },
  Russian: {
    locale: "ru",
    decimal: ",",
    ordinal: ord(ru.toOrdinal),
    ordinalPattern: /(?<![\p{L}\p{N}])(\d+)-(?:й|я|е|го|му|м|ю|х)(?![\p{L}])/gu,
    currency: {
      USD: { major: f("доллара", "доллар", "доллара", "долларов"), minor: f("цента", "цент", "цента", "центов") },
      EUR: { major: f("евро"), minor: f("цента", "цент", "цента", "центов") },
      GBP: { major: f("фунта", "фунт", "фунта", "фунтов"), minor: f("пенса", "пенс", "пенса", "пенсов") },
    },
    and: "",
    months: ["января", "февраля", "марта", "апреля", "мая", "июня", "июля", "августа", "сентября", "октября", "ноября", "декабря"],
    date: (d, m, y) => `${d} ${m} ${y} года`,
    abbreviations: { "т. е.": "то есть", "т.е.": "то есть", "и т. д.": "и так далее", "и т.д.": "и так далее", "и т. п.": "и тому подобное", "г-н": "господин", "г-жа": "госпожа", "др.": "другие" },
    units: { км: f("километра", "километр", "километра", "километров"), кг: f("килограмма", "килограмм", "килограмма", "килограммов") },
  },
  Swahili: {
    locale: "sw",
    decimal: ".",
    percentBefore: "asilimia ",
    currency: {
      USD: { major: f("dola"), minor: f("senti") },
      EUR: { major: f("yuro"), minor: f("senti") },
      GBP: { major: f("pauni"), minor: f("peni") },
    },
    unitFirst: true,
    and: "na",
    months: latinMonths.sw,
    date: (d, m, y) => `tarehe ${num(d)} ${m} ${y}`,
    abbreviations: { "n.k.": "na kadhalika", "Bw.": "Bwana", "Bi.": "Bibi", "Dkt.": "Daktari", "k.m.": "kwa mfano" },
    units: { km: f("kilomita"), kg: f("kilo") },
  },
  Amharic: {
    locale: "am",
    decimal: ".",
    percent: "በመቶ",
    currency: {
      USD: { major: f("ዶላር"), minor: f("ሳንቲም") },
      EUR: { major: f("ዩሮ"), minor: f("ሳንቲም") },
      GBP: { major: f("ፓውንድ"), minor: f("ፔኒ") },
    },
    and: "",
    months: ["ጃንዩወሪ", "ፌብሩወሪ", "ማርች", "ኤፕሪል", "ሜይ", "ጁን", "ጁላይ", "ኦገስት", "ሴፕቴምበር", "ኦክቶበር", "ኖቬምበር", "ዲሴምበር"],
    date: (d, m, y) => `${m} ${num(d)} ${y}`,
    abbreviations: { "ዶ/ር": "ዶክተር", "ወ/ሮ": "ወይዘሮ", "ወ/ሪት": "ወይዘሪት", "ት/ቤት": "ትምህርት ቤት" },
    units: { km: f("ኪሎ ሜትር"), kg: f("ኪሎ ግራም") },
  },
  Arabic: {
    locale: "ar",
    readsAfter: ["EUR"],
    decimal: ".",
    percent: "بالمئة",
    currency: {
      USD: { major: f("دولار"), minor: f("سنت") },
      EUR: { major: f("يورو"), minor: f("سنت") },
      GBP: { major: f("جنيه إسترليني"), minor: f("بنس") },
    },
    and: "و",
    months: ["يناير", "فبراير", "مارس", "أبريل", "مايو", "يونيو", "يوليو", "أغسطس", "سبتمبر", "أكتوبر", "نوفمبر", "ديسمبر"],
    date: (d, m, y) => `${num(d)} ${m} ${y}`,
    abbreviations: {},
    units: { km: f("كيلومتر"), kg: f("كيلوغرام") },
  },
  Hindi: {
    locale: "hi",
    decimal: ".",
    percent: "प्रतिशत",
    currency: {
      USD: { major: f("डॉलर"), minor: f("सेंट") },
      EUR: { major: f("यूरो"), minor: f("सेंट") },
      GBP: { major: f("पाउंड"), minor: f("पेंस") },
    },
    and: "",
    months: ["जनवरी", "फ़रवरी", "मार्च", "अप्रैल", "मई", "जून", "जुलाई", "अगस्त", "सितंबर", "अक्टूबर", "नवंबर", "दिसंबर"],
    date: (d, m, y) => `${num(d)} ${m} ${y}`,
    abbreviations: { "डॉ.": "डॉक्टर", "श्री.": "श्री", "किमी": "किलोमीटर", "किग्रा": "किलोग्राम" },
    units: { km: f("किलोमीटर"), kg: f("किलोग्राम") },
  },
  Urdu: {
    locale: "ur",
    decimal: ".",
    currency: {
      USD: { major: f("ڈالر"), minor: f("سینٹ") },
      EUR: { major: f("یورو"), minor: f("سینٹ") },
      GBP: { major: f("پاؤنڈ"), minor: f("پینس") },
    },
    and: "",
    months: ["جنوری", "فروری", "مارچ", "اپریل", "مئی", "جون", "جولائی", "اگست", "ستمبر", "اکتوبر", "نومبر", "دسمبر"],
    date: (d, m, y) => `${num(d)} ${m} ${y}`,
    abbreviations: {},
    units: { km: f("کلومیٹر"), kg: f("کلوگرام") },
  },
  Chinese: {
    locale: "zh",
    decimal: ".",
    decimalWord: "点",
    percentBefore: "百分之",
    currency: {
      USD: { major: f("美元"), minor: f("美分") },
      EUR: { major: f("欧元"), minor: f("欧分") },
      GBP: { major: f("英镑"), minor: f("便士") },
    },
    and: "",
    months: ["1月", "2月", "3月", "4月", "5月", "6月", "7月", "8月", "9月", "10月", "11月", "12月"],
    date: (d, m, y) => `${y}年${m}${num(d)}日`,
    time: (h, m) => `${h}点${m === 0 ? "" : `${m}分`}`,
    abbreviations: {},
    units: { km: f("公里"), kg: f("公斤") },
  },
  Japanese: {
    locale: "ja",
    decimal: ".",
    decimalWord: "てん",
    percent: "ぱーせんと",
    currency: {
      USD: { major: f("どる"), minor: f("せんと") },
      EUR: { major: f("ゆーろ"), minor: f("せんと") },
      GBP: { major: f("ぽんど"), minor: f("ぺんす") },
    },
    and: "",
    months: ["1がつ", "2がつ", "3がつ", "4がつ", "5がつ", "6がつ", "7がつ", "8がつ", "9がつ", "10がつ", "11がつ", "12がつ"],
    date: (d, m, y) => `${y}ねん ${m} ${num(d)}にち`,
    time: (h, m) => `${h}じ${m === 0 ? "" : ` ${m}ふん`}`,
    abbreviations: {},
    units: { km: f("きろめーとる"), kg: f("きろぐらむ") },
  },
  Korean: {
    locale: "ko",
    decimal: ".",
    decimalWord: " 점 ",
    percent: "퍼센트",
    currency: {
      USD: { major: f("달러"), minor: f("센트") },
      EUR: { major: f("유로"), minor: f("센트") },
      GBP: { major: f("파운드"), minor: f("펜스") },
    },
    and: "",
    months: ["1월", "2월", "3월", "4월", "5월", "6월", "7월", "8월", "9월", "10월", "11월", "12월"],
    date: (d, m, y) => `${y}년 ${m} ${num(d)}일`,
    time: (h, m) => `${h}시${m === 0 ? "" : ` ${m}분`}`,
    abbreviations: {},
    units: { km: f("킬로미터"), kg: f("킬로그램") },
  },
};
