import { describe, expect, it } from "vitest";
import { LANGUAGES, type Language } from "../languages.ts";
import { normaliseText } from "./normalise.ts";

/**
 * Input → normalised text, per language. Every row is a form an offline engine was measured to misread
 * (see docs/tasks.md#text-normalisation), except the "kept" rows: forms the engines read well stay as written.
 */
const CASES: Record<Language, [string, string][]> = {
  English: [
    ["It costs $5.", "It costs 5 dollars."],
    ["£3.20 and €1", "3 pounds and 20 pence and 1 euro"],
    ["$1,250.5", "1250 dollars and 50 cents"],
    ["The 1st, 2nd, 3rd and 21st", "The 1st, 2nd, 3rd and 21st"],
    ["3,5", "3.5"],
    ["1 000 000 people", "1000000 people"],
    ["on 2026-11-28", "on November twenty-eighth, 2026"],
    ["on 28/11/2026", "on November twenty-eighth, 2026"],
    ["on 11/28/2026", "on November twenty-eighth, 2026"],
    ["Dr. Smith, e.g. a cat, etc. Then", "Doctor Smith, for example a cat, et cetera. Then"],
    ["Mr. Jones ran 12 km and lifted 1 kg.", "Mr. Jones ran 12 kilometres and lifted 1 kilogram."],
    // kept: cardinals, years, decimals, percent and times are read well by every engine
    ["7 42 1234 1999 2024 3.5 50 % 14:30 2:30 pm", "7 42 1234 1999 2024 3.5 50 % 14:30 2:30 pm"],
  ],
  French: [
    ["Il coûte 5 € ou $5.", "Il coûte 5 € ou 5 dollars."],
    ["£3.20", "3 livres et 20 pence"],
    ["le 1er et la 2e", "le 1er et la deuxième"],
    ["3.5 litres", "3,5 litres"],
    ["le 2026-11-28", "le 28 novembre 2026"],
    ["le 01/12/2026", "le premier décembre 2026"],
    ["à 2:30 pm", "à 14:30"],
    ["M. Dupont, Mme Durand, p. ex.", "Monsieur Dupont, Madame Durand, par exemple."],
    ["3,5 50 % 14:30 12 km 5 € 1 000 000", "3,5 50 % 14:30 12 km 5 € 1 000 000"],
  ],
  German: [
    ["Es kostet 5 € oder $5 oder €2,50.", "Es kostet 5 € oder 5 Dollar oder 2 Euro und 50 Cent."],
    ["am 3. Oktober und der 2. Platz", "am dritten Oktober und der zweite Platz"],
    ["Das kostet 3. Dann", "Das kostet 3. Dann"],
    ["3.5 Liter", "3,5 Liter"],
    ["am 2026-11-28, der 2026-11-28", "am achtundzwanzigsten November 2026, der achtundzwanzigste November 2026"],
    ["um 2:30 pm", "um 14:30"],
    ["z. B. Dr. Müller usw.", "zum Beispiel Doktor Müller und so weiter."],
    ["12 km und 1 kg", "12 Kilometer und 1 Kilogramm"],
    ["1.500 Menschen, 3,5 50 % 14:30", "1.500 Menschen, 3,5 50 % 14:30"],
  ],
  Spanish: [
    ["Cuesta 5 € o $1.", "Cuesta 5 € o 1 dólar."],
    ["1 000 000 personas", "1000000 personas"],
    ["el 1.º y la 2.ª, el 1º", "el primero y la segunda, el 1º"],
    ["3.5 litros", "3,5 litros"],
    ["el 2026-11-28", "el 28 de noviembre de 2026"],
    ["Sra. García, p. ej. perros, etc.", "Sra. García, por ejemplo perros, etcétera."],
    ["12 km", "12 kilómetros"],
  ],
  Italian: [
    ["Costa 5 € o £2", "Costa 5 € o 2 sterline"],
    ["il 1º posto", "il 1º posto"],
    ["3.5 litri", "3,5 litri"],
    ["il 2026-11-01", "il primo novembre 2026"],
    ["Sig. Rossi, Dott. Bianchi, ecc.", "signor Rossi, dottor Bianchi, eccetera."],
    ["12 km", "12 chilometri"],
  ],
  Portuguese: [
    ["Custa 5 € ou $1,50", "Custa 5 € ou 1 dólar e 50 cêntimos"],
    ["o 1º lugar", "o 1º lugar"],
    ["3.5 litros", "3,5 litros"],
    ["em 28/11/2026", "em 28 de novembro de 2026"],
    ["Sr. Silva, Sra. Costa, Dr. Sousa", "senhor Silva, senhora Costa, Dr. Sousa"],
    ["12 km e 1 kg", "12 quilómetros e 1 quilo"],
  ],
  Dutch: [
    ["Het kost 5 € of £3.", "Het kost 5 euro of 3 pond."],
    ["de 1e en de 2de", "de eerste en de tweede"],
    ["3.5 liter", "3,5 liter"],
    ["op 2026-11-28", "op 28 november 2026"],
    ["dhr. Jansen, bijv. katten, enz.", "de heer Jansen, bijvoorbeeld katten, enzovoort."],
    ["12 km", "12 kilometer"],
  ],
  Russian: [
    ["Стоит $5 или 21 €.", "Стоит 5 долларов или 21 евро."],
    ["£3.02", "3 фунта 2 пенса"],
    ["$1", "1 доллар"],
    ["1-й и 2-я", "первый и второй"],
    ["3.5 литра", "3,5 литра"],
    ["2026-11-28", "28 ноября 2026 года"],
    ["т. е. кошки и т. д.", "то есть кошки и так далее."],
    ["5 км и 2 кг", "5 километров и 2 килограмма"],
  ],
  Swahili: [
    ["Inagharimu $5.", "Inagharimu dola 5."],
    ["50 %", "asilimia 50"],
    ["2026-11-28", "tarehe 28 Novemba 2026"],
    ["3,5", "3.5"],
    ["Bw. Juma, n.k.", "Bwana Juma, na kadhalika."],
    ["12 km", "12 kilomita"],
  ],
  Amharic: [
    ["$5", "5 ዶላር"],
    ["50 %", "50 በመቶ"],
    ["2026-11-28", "ኖቬምበር 28 2026"],
    ["ዶ/ር አበበ", "ዶክተር አበበ"],
    ["12 km", "12 ኪሎ ሜትር"],
  ],
  Arabic: [
    ["$5", "5 دولار"],
    ["50 %", "50 بالمئة"],
    ["3,5", "3.5"],
    ["2026-11-28", "28 نوفمبر 2026"],
    ["12 km", "12 كيلومتر"],
  ],
  Hindi: [
    ["$5", "5 डॉलर"],
    ["50%", "50 प्रतिशत"],
    ["2026-11-28", "28 नवंबर 2026"],
    ["डॉ. शर्मा", "डॉक्टर शर्मा"],
    ["12 km", "12 किलोमीटर"],
  ],
  Urdu: [
    ["$5", "5 ڈالر"],
    ["2026-11-28", "28 نومبر 2026"],
    ["3,5", "3.5"],
    ["12 km", "12 کلومیٹر"],
  ],
  Chinese: [
    ["$5", "5 美元"],
    ["3.5", "3点5"],
    ["50 %", "百分之50"],
    ["14:30", "14点30分"],
    ["2026-11-28", "2026年11月28日"],
    ["12 km", "12 公里"],
  ],
  Japanese: [
    ["$5", "5 どる"],
    ["3.5", "3てん5"],
    ["50 %", "50 ぱーせんと"],
    ["14:30", "14じ 30ふん"],
    ["2026-11-28", "2026ねん 11がつ 28にち"],
  ],
  Korean: [
    ["$5", "5 달러"],
    ["3.5", "3 점 5"],
    ["50 %", "50 퍼센트"],
    ["2:30 pm", "14시 30분"],
    ["2026-11-28", "2026년 11월 28일"],
  ],
};

describe("text normalisation per language", () => {
  it("has rows for every language of the service", () => {
    expect(Object.keys(CASES).sort()).toEqual([...LANGUAGES].sort());
  });

  for (const language of LANGUAGES) {
    it.each(CASES[language])(`${language}: %s`, (input, expected) => {
      expect(normaliseText(input, language)).toBe(expected);
    });
  }

  it.each(LANGUAGES)("%s: text with no numbers, symbols or abbreviations is returned unchanged", (language) => {
    const plain = "Hello world, this is plain text.\nA second line!";
    expect(normaliseText(plain, language)).toBe(plain);
  });

  it("leaves impossible dates and times as written", () => {
    expect(normaliseText("2026-13-45 and 31/31/2026", "English")).toBe("2026-13-45 and 31/31/2026");
    expect(normaliseText("25:99", "Chinese")).toBe("25:99");
  });
});
