/**
 * Checks HTTP responses against the OpenAPI document a service serves, so a test fails when the
 * service answers something its document does not say: an undocumented path, method or status, a
 * content type the operation does not list, a JSON body that does not match the response schema, or
 * a documented header that is missing (when `required`) or malformed.
 *
 * Schemas are validated with Ajv in the document's own dialect: OpenAPI 3.1 is JSON Schema 2020-12
 * (`type: [..., "null"]` and `anyOf` with `{type: "null"}` for null); OpenAPI 3.0 is validated with
 * Ajv's draft-07 validator, which understands 3.0's `nullable: true`.
 *
 * `createContractFetch()` wraps a fetch so that every response from the origins it watches is checked
 * (JSON bodies are read from a clone; streams and downloads only for status and content type).
 */
import { Ajv, type ErrorObject, type ValidateFunction } from "ajv";
import { Ajv2020 } from "ajv/dist/2020.js";
import ajvFormats from "ajv-formats";

type Json = Record<string, unknown>;

/** One way a response differs from the document. */
export interface ContractProblem {
  /** The operation, e.g. `get_capabilities (GET /v1/capabilities)`, or the method and path when none matched. */
  operation: string;
  status: number;
  /** Where: a JSON pointer into the body (`/translation/pairs/0/pivot`), `header Retry-After`, or "" for the response. */
  pointer: string;
  message: string;
}

/** A response that does not match the document; its message lists every problem with its pointer. */
export class ContractViolation extends Error {
  constructor(
    readonly url: string,
    readonly problems: readonly ContractProblem[],
  ) {
    super(
      `The response to ${url} does not match the served OpenAPI document:\n` +
        problems.map((p) => `  - ${p.operation} → ${p.status}${p.pointer === "" ? "" : ` at ${p.pointer}`}: ${p.message}`).join("\n"),
    );
    this.name = "ContractViolation";
  }
}

/**
 * A route the service answers that is deliberately not part of the document (health and metrics
 * endpoints, signed downloads, the docs page): a response there is only checked against `statuses`.
 */
export interface OutsideRoute {
  /** Tested against the URL's path (percent-encoded, as sent). */
  path: RegExp;
  /** Why it is not in the document (shown in problems). */
  what: string;
  /** The statuses it may answer; any status when left out. */
  statuses?: readonly number[];
}

export interface ResponseCheckerOptions {
  outside?: readonly OutsideRoute[];
  /**
   * Whether a JSON object may carry properties its schema does not list. JSON Schema allows them
   * unless `additionalProperties` says otherwise; by default (`false`) an object schema with
   * `properties` is read as closed, so a field the document does not name is drift too.
   */
  allowUndocumentedProperties?: boolean;
}

export interface CheckedRequest {
  method: string;
  url: string;
}

export interface ResponseChecker {
  /** The document's `openapi` version. */
  readonly version: string;
  /** The problems of one response (a JSON body is read from a clone; the response stays unread). */
  check(request: CheckedRequest, response: Response): Promise<ContractProblem[]>;
}

interface OperationEntry {
  method: string;
  template: string;
  pattern: RegExp;
  /** Literal characters in the template: the more specific match wins. */
  literal: number;
  operation: Json;
}

const METHODS = ["get", "put", "post", "delete", "options", "head", "patch", "trace"] as const;
/** Annotation keywords of OpenAPI's schema object that JSON Schema does not define. */
const OPENAPI_KEYWORDS = ["example", "discriminator", "xml", "externalDocs"];
const DOC_ID = "urn:voiceloc:openapi-document";
const MAX_ERRORS_SHOWN = 8;

const isObject = (value: unknown): value is Json => typeof value === "object" && value !== null && !Array.isArray(value);

function createAjv(version: string, extensions: string[]): Ajv | Ajv2020 {
  const options = { allErrors: true, strict: true, strictTypes: false, strictTuples: false, logger: false } as const;
  const ajv = version.startsWith("3.1") ? new Ajv2020(options) : new Ajv(options);
  // A CommonJS module: under NodeNext its default import is `module.exports`, whose `default` is the plugin.
  ajvFormats.default(ajv);
  ajv.addVocabulary([...OPENAPI_KEYWORDS, ...extensions]);
  return ajv;
}

/** The `x-…` extension keywords used in the document's schemas (each must be declared to Ajv in strict mode). */
function extensionKeywords(value: unknown, found = new Set<string>()): string[] {
  if (Array.isArray(value)) for (const item of value) extensionKeywords(item, found);
  else if (isObject(value))
    for (const [key, item] of Object.entries(value)) {
      if (key.startsWith("x-")) found.add(key);
      extensionKeywords(item, found);
    }
  return [...found];
}

/** Keys whose values are not schemas (or are maps of names to schemas, handled by the caller). */
const DATA_KEYWORDS = new Set(["example", "examples", "default", "enum", "const", "required", "description", "title"]);

/**
 * A schema for Ajv: the document's `#/components/schemas/…` references pointed at the schemas
 * registered under DOC_ID, and, when `closed`, every object schema with `properties` (not a member of
 * an `allOf`, whose parts each list only some) refusing the properties it does not list.
 */
function prepare(schema: unknown, closed: { keyword: "unevaluatedProperties" | "additionalProperties" } | undefined, inAllOf = false): unknown {
  if (Array.isArray(schema)) return schema.map((item) => prepare(item, closed, inAllOf));
  if (!isObject(schema)) return schema;
  const out: Json = {};
  for (const [key, value] of Object.entries(schema)) {
    if (key === "$ref" && typeof value === "string") {
      if (!value.startsWith("#/components/schemas/")) throw new Error(`unsupported schema $ref ${value}: only #/components/schemas/… is resolved`);
      out[key] = `${DOC_ID}#/$defs/${value.slice("#/components/schemas/".length)}`;
    } else if (DATA_KEYWORDS.has(key)) out[key] = value;
    else if ((key === "properties" || key === "$defs" || key === "patternProperties") && isObject(value)) {
      out[key] = Object.fromEntries(Object.entries(value).map(([name, sub]) => [name, prepare(sub, closed)]));
    } else out[key] = prepare(value, closed, key === "allOf");
  }
  if (closed && !inAllOf && isObject(schema.properties) && !("additionalProperties" in schema) && !("unevaluatedProperties" in schema) && !("patternProperties" in schema)) {
    out[closed.keyword] = false;
  }
  return out;
}

function templatePattern(template: string): RegExp {
  const source = template
    .split(/(\{[^}]+\})/)
    .map((part) => (part.startsWith("{") && part.endsWith("}") ? "[^/]+" : part.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")))
    .join("");
  return new RegExp(`^${source}$`);
}

/** `application/json; charset=utf-8` → `application/json`. */
function mediaType(header: string | null): string | undefined {
  const type = header?.split(";")[0]?.trim().toLowerCase();
  return type === "" ? undefined : type;
}

function mediaMatches(documented: string, actual: string): boolean {
  const [dType, dSub] = documented.toLowerCase().split("/");
  const [aType, aSub] = actual.split("/");
  return (dType === "*" || dType === aType) && (dSub === "*" || dSub === aSub);
}

const isJsonMedia = (type: string): boolean => type === "application/json" || type.endsWith("+json");

function describeError(error: ErrorObject): string {
  const params = error.params as Record<string, unknown>;
  if (Array.isArray(params.allowedValues)) {
    const values = (params.allowedValues as unknown[]).map((v) => JSON.stringify(v));
    return `${error.message ?? "invalid"}: ${values.slice(0, 8).join(", ")}${values.length > 8 ? `, … (${values.length} in all)` : ""}`;
  }
  if (typeof params.additionalProperty === "string") return `${error.message ?? "invalid"}: ${params.additionalProperty}`;
  if (typeof params.unevaluatedProperty === "string") return `has a property the schema does not list: ${params.unevaluatedProperty}`;
  return error.message ?? "invalid";
}

/** A header value in the type its schema asks for (headers are text on the wire). */
function headerValue(value: string, schema: Json): unknown {
  const type = schema.type;
  if ((type === "integer" || type === "number") && /^-?\d+(\.\d+)?$/.test(value.trim())) return Number(value);
  if (type === "boolean" && (value === "true" || value === "false")) return value === "true";
  return value;
}

export function createResponseChecker(document: unknown, options: ResponseCheckerOptions = {}): ResponseChecker {
  if (!isObject(document) || typeof document.openapi !== "string" || !isObject(document.paths)) {
    throw new Error("not an OpenAPI document: it needs an `openapi` version and `paths`");
  }
  const version = document.openapi;
  if (!/^3\.[01]\./.test(version)) throw new Error(`OpenAPI ${version} is not supported (3.0.x or 3.1.x)`);
  const components = isObject(document.components) ? document.components : {};
  const schemas = isObject(components.schemas) ? components.schemas : {};
  const ajv = createAjv(version, extensionKeywords(document));
  // 2020-12's unevaluatedProperties also sees the properties an anyOf/oneOf/allOf branch evaluated.
  const closed = options.allowUndocumentedProperties ? undefined : ({ keyword: version.startsWith("3.1") ? "unevaluatedProperties" : "additionalProperties" } as const);
  const rebase = (schema: unknown): unknown => prepare(schema, closed);
  ajv.addSchema({ $id: DOC_ID, $defs: Object.fromEntries(Object.entries(schemas).map(([name, schema]) => [name, rebase(schema)])) });

  // Response and header objects may be references to components (#/components/responses/…).
  const resolve = (value: unknown): unknown => {
    if (!isObject(value) || typeof value.$ref !== "string") return value;
    const target = value.$ref
      .replace(/^#\//, "")
      .split("/")
      .map((part) => part.replace(/~1/g, "/").replace(/~0/g, "~"))
      .reduce<unknown>((node, key) => (isObject(node) ? node[key] : undefined), document);
    if (target === undefined) throw new Error(`unresolved $ref ${value.$ref}`);
    return resolve(target);
  };

  const operations: OperationEntry[] = [];
  for (const [template, item] of Object.entries(document.paths)) {
    if (!isObject(item)) continue;
    for (const method of METHODS) {
      const operation = item[method];
      if (isObject(operation)) {
        operations.push({ method, template, pattern: templatePattern(template), literal: template.replace(/\{[^}]+\}/g, "").length, operation });
      }
    }
  }
  operations.sort((a, b) => b.literal - a.literal);
  const serverPath = (() => {
    const servers = Array.isArray(document.servers) ? document.servers : [];
    const first: unknown = servers[0];
    if (!isObject(first) || typeof first.url !== "string") return "";
    try {
      return new URL(first.url, "http://server.invalid").pathname.replace(/\/+$/, "");
    } catch {
      return "";
    }
  })();

  const compiled = new Map<unknown, ValidateFunction>();
  const validator = (schema: Json): ValidateFunction => {
    let validate = compiled.get(schema);
    if (!validate) {
      validate = ajv.compile(rebase(schema) as Json);
      compiled.set(schema, validate);
    }
    return validate;
  };

  const check = async (request: CheckedRequest, response: Response): Promise<ContractProblem[]> => {
    const method = request.method.toLowerCase();
    const url = new URL(response.url || request.url);
    const path = serverPath && url.pathname.startsWith(serverPath) ? url.pathname.slice(serverPath.length) || "/" : url.pathname;
    const status = response.status;
    const problems: ContractProblem[] = [];
    const problem = (operation: string, pointer: string, message: string) => problems.push({ operation, status, pointer, message });

    const outside = options.outside?.find((route) => route.path.test(path));
    if (outside) {
      if (outside.statuses && !outside.statuses.includes(status)) {
        problem(`${request.method.toUpperCase()} ${path} (${outside.what})`, "", `status ${status} is not one of ${outside.statuses.join(", ")}`);
      }
      return problems;
    }
    // HEAD is answered as GET without a body.
    const answers = (candidate: OperationEntry) => candidate.method === method || (method === "head" && candidate.method === "get");
    const onPath = operations.filter((entry) => entry.pattern.test(path));
    const entry = onPath.find((candidate) => candidate.method === method) ?? onPath.find(answers);
    if (!entry) {
      if (status === 307 || status === 308) {
        // A trailing-slash redirect (described in the document's text): its Location must name a documented path.
        const location = response.headers.get("location");
        const target = location === null ? undefined : new URL(location, url).pathname;
        if (target === undefined || !operations.some((candidate) => answers(candidate) && candidate.pattern.test(target))) {
          problem(`${request.method.toUpperCase()} ${path}`, "header Location", `a ${status} redirect to ${location ?? "nowhere"}, which is not a documented ${request.method.toUpperCase()} operation`);
        }
        return problems;
      }
      const documented = [...new Set(onPath.map((candidate) => candidate.method.toUpperCase()))];
      problem(
        `${request.method.toUpperCase()} ${path}`,
        "",
        documented.length === 0
          ? "no path of the document matches this URL"
          : `the document has no ${request.method.toUpperCase()} operation here (only ${documented.join(", ")} ${onPath[0]?.template ?? ""})`,
      );
      return problems;
    }
    const name = `${typeof entry.operation.operationId === "string" ? entry.operation.operationId : "(no operationId)"} (${entry.method.toUpperCase()} ${entry.template})`;
    const responses = isObject(entry.operation.responses) ? entry.operation.responses : {};
    const documentedResponse = resolve(responses[String(status)] ?? responses[`${String(status)[0]}XX`] ?? responses.default);
    if (!isObject(documentedResponse)) {
      problem(name, "", `status ${status} is not documented (documented: ${Object.keys(responses).join(", ")})`);
      return problems;
    }

    const headers = isObject(documentedResponse.headers) ? documentedResponse.headers : {};
    for (const [header, definition] of Object.entries(headers)) {
      const spec = resolve(definition);
      if (!isObject(spec) || header.toLowerCase() === "content-type") continue;
      const value = response.headers.get(header);
      if (value === null) {
        if (spec.required === true) problem(name, `header ${header}`, "is required and missing");
        continue;
      }
      if (isObject(spec.schema)) {
        const validate = validator(spec.schema);
        if (!validate(headerValue(value, spec.schema))) {
          for (const error of (validate.errors ?? []).slice(0, MAX_ERRORS_SHOWN)) problem(name, `header ${header}`, `${JSON.stringify(value)} ${describeError(error)}`);
        }
      }
    }

    const content = isObject(documentedResponse.content) ? documentedResponse.content : undefined;
    const actualType = mediaType(response.headers.get("content-type"));
    if (!content || Object.keys(content).length === 0) {
      if (actualType !== undefined && response.headers.get("content-length") !== "0") {
        problem(name, "header Content-Type", `the document gives this status no body, the response is ${actualType}`);
      }
      return problems;
    }
    if (actualType === undefined) {
      problem(name, "header Content-Type", `missing; the document says ${Object.keys(content).join(" or ")}`);
      return problems;
    }
    const mediaKey = Object.keys(content).find((key) => mediaMatches(key, actualType));
    if (mediaKey === undefined) {
      problem(name, "header Content-Type", `${actualType} is not what the document says (${Object.keys(content).join(", ")})`);
      return problems;
    }
    const media = content[mediaKey];
    if (method === "head" || !isJsonMedia(actualType) || !isObject(media) || !isObject(media.schema)) return problems;

    const text = await response.clone().text();
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      problem(name, "", `the body is not JSON: ${JSON.stringify(text.slice(0, 200))}`);
      return problems;
    }
    const validate = validator(media.schema);
    if (!validate(body)) {
      const errors = validate.errors ?? [];
      for (const error of errors.slice(0, MAX_ERRORS_SHOWN)) {
        const at = error.instancePath === "" ? "/" : error.instancePath;
        const value = at === "/" ? body : error.instancePath.split("/").slice(1).reduce<unknown>((node, key) => (isObject(node) || Array.isArray(node) ? (node as Record<string, unknown>)[key.replace(/~1/g, "/").replace(/~0/g, "~")] : undefined), body);
        problem(name, `body ${at}`, `${describeError(error)} (got ${JSON.stringify(value)?.slice(0, 120) ?? "undefined"}; schema ${error.schemaPath})`);
      }
      if (errors.length > MAX_ERRORS_SHOWN) problem(name, "body", `… and ${errors.length - MAX_ERRORS_SHOWN} more`);
    }
    return problems;
  };

  return { version, check };
}

/* ------------------------------------------------------------ checked fetch */

export interface ContractFetchOptions extends ResponseCheckerOptions {
  /** Where each watched origin serves its document (default `/openapi.json`). */
  documentPath?: string;
}

export interface ContractFetch {
  /** A fetch that checks every response from a watched origin and rejects with a ContractViolation when one differs. */
  readonly fetch: typeof globalThis.fetch;
  /** Checks the responses of this origin (`http://127.0.0.1:8080`) against the document it serves. */
  watch(origin: string): void;
  /** How many responses were checked so far. */
  readonly checked: number;
  /** Every violation so far (also those a caller caught and swallowed), emptied by the call. */
  takeViolations(): ContractViolation[];
}

function requestOf(input: Parameters<typeof globalThis.fetch>[0], init: Parameters<typeof globalThis.fetch>[1]): CheckedRequest {
  if (input instanceof Request) return { method: init?.method ?? input.method, url: input.url };
  return { method: init?.method ?? "GET", url: input instanceof URL ? input.href : String(input) };
}

export function createContractFetch(inner: typeof globalThis.fetch, options: ContractFetchOptions = {}): ContractFetch {
  const documentPath = options.documentPath ?? "/openapi.json";
  const watched = new Set<string>();
  const checkers = new Map<string, Promise<ResponseChecker>>();
  const violations: ContractViolation[] = [];
  let checked = 0;

  const checkerFor = (origin: string): Promise<ResponseChecker> => {
    let checker = checkers.get(origin);
    if (!checker) {
      checker = (async () => {
        const res = await inner(`${origin}${documentPath}`);
        if (res.status !== 200) throw new Error(`${origin}${documentPath} answered ${res.status}`);
        return createResponseChecker(await res.json(), options);
      })();
      // A failed read is tried again on the next response (the service may not have been up yet).
      checker.catch(() => checkers.delete(origin));
      checkers.set(origin, checker);
    }
    return checker;
  };

  const fetch: typeof globalThis.fetch = async (input, init) => {
    const response = await inner(input, init);
    const request = requestOf(input, init);
    const origin = new URL(request.url).origin;
    if (!watched.has(origin) || new URL(request.url).pathname === documentPath) return response;
    const problems = await (await checkerFor(origin)).check(request, response);
    checked += 1;
    if (problems.length > 0) {
      const violation = new ContractViolation(`${request.method.toUpperCase()} ${response.url || request.url}`, problems);
      violations.push(violation);
      throw violation;
    }
    return response;
  };

  return {
    fetch,
    watch: (origin) => void watched.add(new URL(origin).origin),
    get checked() {
      return checked;
    },
    takeViolations: () => violations.splice(0),
  };
}

/* ------------------------------------------------ the process's global fetch */

let installed: ContractFetch | undefined;

/**
 * Replaces `globalThis.fetch` with a checked one (once per test file, e.g. from a vitest setup file);
 * `restore()` puts the original back. Code that starts a service in a test names its origin with
 * `checkResponsesOf()`.
 */
export function installContractFetch(options: ContractFetchOptions = {}): ContractFetch & { restore(): void } {
  const original = globalThis.fetch;
  const contract = createContractFetch(original, options);
  globalThis.fetch = contract.fetch;
  installed = contract;
  return Object.assign(contract, {
    restore: () => {
      if (globalThis.fetch === contract.fetch) globalThis.fetch = original;
      if (installed === contract) installed = undefined;
    },
  });
}

/** Checks the responses of this origin from now on, when a checked fetch is installed (a no-op otherwise). */
export function checkResponsesOf(origin: string): void {
  installed?.watch(origin);
}
