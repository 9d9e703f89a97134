/**
 * Vitest setup of every end-to-end test file: the global fetch checks each response of a watched
 * service (started by `startService`/`startSampledGateway`, or named with `checkResponsesOf`) against
 * the `/openapi.json` that service serves. A response the document does not describe rejects the
 * call and fails the test, even when the code that made the call caught the error.
 */
import { afterAll, afterEach, expect } from "vitest";
import { installContractFetch, type OutsideRoute } from "@voiceloc/testing";

/** What the service answers besides its documented operations. */
const OUTSIDE_THE_DOCUMENT: OutsideRoute[] = [
  { path: /^\/healthz$/, what: "liveness", statuses: [200] },
  { path: /^\/readyz$/, what: "readiness", statuses: [200, 503] },
  { path: /^\/metrics$/, what: "Prometheus metrics", statuses: [200, 401] },
  { path: /^\/openapi\.json$/, what: "the document itself", statuses: [200] },
  { path: /^\/docs(\/|$)/, what: "the documentation page", statuses: [200, 304, 308, 404] },
  { path: /^\/dashboard(\/|$)/, what: "the dashboard", statuses: [200, 302, 303, 400, 401, 403, 404, 429] },
  // Signed result links (described in the document's text): a range, a bad or expired signature, no such file.
  { path: /^\/v1\/files\//, what: "a signed download", statuses: [200, 206, 403, 404, 416] },
];

const contract = installContractFetch({ outside: OUTSIDE_THE_DOCUMENT });

afterEach(() => {
  const violations = contract.takeViolations();
  if (violations.length > 0) throw new Error(violations.map((v) => v.message).join("\n\n"));
});

afterAll(() => {
  contract.restore();
  // Only an end-to-end file must have talked to a service; a check of the repository's files needs none.
  const endToEnd = /\.e2e\.test\.ts$/.test(expect.getState().testPath ?? ".e2e.test.ts");
  if (endToEnd && contract.checked === 0) {
    throw new Error("No response of the service was checked against its OpenAPI document: name its origin with checkResponsesOf() once it listens.");
  }
});
