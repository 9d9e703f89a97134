export { normaliseText } from "./normalise.ts";
