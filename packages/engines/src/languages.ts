/** The service's languages: the contract's enumeration, in one place. */
export { LANGUAGES, isLanguage, type Language } from "@voiceloc/contracts";
