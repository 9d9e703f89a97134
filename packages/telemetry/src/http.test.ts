import { Hono } from "hono";
import { describe, expect, it } from "vitest";
import { httpMetrics, metricsHandler, UNMATCHED_ROUTE } from "./http.ts";
import { registry } from "./metrics.ts";

async function count(labels: Record<string, string>): Promise<number> {
  const metric = await registry.getSingleMetric("voiceloc_http_request_duration_seconds")!.get();
  const row = metric.values.find(
    (v) => (v as { metricName?: string }).metricName === "voiceloc_http_request_duration_seconds_count" && Object.entries(labels).every(([k, want]) => v.labels[k] === want),
  );
  return row?.value ?? 0;
}

function app(token?: string) {
  const a = new Hono();
  a.use("*", httpMetrics());
  a.use("/v1/*", async (c, next) => (c.req.header("api-key") === "refuse" ? c.json({ detail: "no" }, 401) : next()));
  a.get("/v1/items/:id", (c) => c.json({ id: c.req.param("id") }));
  a.post("/v1/items/", (c) => c.json({ created: true }, 201));
  a.on(["GET", "HEAD"], "/v1/files/*", (c) => c.text("file"));
  a.get("/v1/boom", () => {
    throw new Error("boom");
  });
  a.get("/metrics", metricsHandler({ token }));
  a.onError((_error, c) => c.json({ detail: "Internal Server Error" }, 500));
  return a;
}

describe("HTTP metrics", () => {
  it("labels requests by the matched route pattern, never the raw path, and by status", async () => {
    const a = app();
    const before = await count({ method: "GET", route: "/v1/items/:id", status: "200" });
    for (const id of ["a1", "b2", "c3", "d4"]) expect((await a.request(`/v1/items/${id}`)).status).toBe(200);
    expect(await count({ method: "GET", route: "/v1/items/:id", status: "200" })).toBe(before + 4);
    expect((await a.request("/v1/items/", { method: "POST" })).status).toBe(201);
    expect(await count({ method: "POST", route: "/v1/items/", status: "201" })).toBeGreaterThanOrEqual(1);
    const text = await (await a.request("/metrics")).text();
    expect(text).not.toMatch(/route="\/v1\/items\/a1"/);
    expect(text).toMatch(/voiceloc_http_request_duration_seconds_count\{method="GET",route="\/v1\/items\/:id",status="200"\} \d+/);
  });

  it("puts every unmatched path into one series, and counts a handler's failure as its 500", async () => {
    const a = app();
    const before = await count({ route: UNMATCHED_ROUTE, status: "404" });
    for (const path of ["/nope", "/v1/unknown/1", "/v1/unknown/2"]) expect((await a.request(path)).status).toBe(404);
    expect(await count({ route: UNMATCHED_ROUTE, status: "404" })).toBe(before + 3);
    expect((await a.request("/v1/boom")).status).toBe(500);
    expect(await count({ route: "/v1/boom", status: "500" })).toBe(1);
  });

  it("labels a wildcard route by its pattern, and a request a middleware refused by the route it matched", async () => {
    const a = app();
    expect((await a.request("/v1/files/abc/def.mp3")).status).toBe(200);
    expect(await count({ method: "GET", route: "/v1/files/*", status: "200" })).toBe(1);
    expect((await a.request("/v1/items/x9", { headers: { "api-key": "refuse" } })).status).toBe(401);
    expect(await count({ method: "GET", route: "/v1/items/:id", status: "401" })).toBe(1);
    expect((await a.request("/v1/items/", { method: "DELETE" })).status).toBe(404);
    expect(await count({ method: "DELETE", route: UNMATCHED_ROUTE, status: "404" })).toBe(1);
  });

  it("serves /metrics in the Prometheus text format with the process metrics", async () => {
    const res = await app().request("/metrics");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^text\/plain; version=0\.0\.4/);
    const text = await res.text();
    expect(text).toContain("# TYPE voiceloc_http_request_duration_seconds histogram");
    expect(text).toContain("# TYPE voiceloc_tasks_total counter");
    expect(text).toMatch(/process_cpu_user_seconds_total \d/);
    expect(text).toMatch(/nodejs_eventloop_lag_seconds \d/);
  });

  it("asks for the bearer token when METRICS_TOKEN is set", async () => {
    const a = app("scrape-token-0123456789");
    expect((await a.request("/metrics")).status).toBe(401);
    expect((await a.request("/metrics", { headers: { Authorization: "Bearer wrong" } })).status).toBe(401);
    const ok = await a.request("/metrics", { headers: { Authorization: "Bearer scrape-token-0123456789" } });
    expect(ok.status).toBe(200);
    expect(await ok.text()).toContain("voiceloc_http_request_duration_seconds");
  });
});

describe("the request histogram", () => {
  it("writes cumulative buckets, sum and count per label set", async () => {
    const { httpRequestDuration } = await import("./metrics.ts");
    const child = httpRequestDuration.labels("GET", "/hist/:id", "200");
    expect(httpRequestDuration.labels("GET", "/hist/:id", "200")).toBe(child);
    for (const seconds of [0.003, 0.2, 50]) child.observe(seconds);
    const text = await registry.getSingleMetricAsString("voiceloc_http_request_duration_seconds");
    const row = (le: string) => `voiceloc_http_request_duration_seconds_bucket{method="GET",route="/hist/:id",status="200",le="${le}"}`;
    expect(text).toContain(`${row("0.0025")} 0\n`);
    expect(text).toContain(`${row("0.005")} 1\n`);
    expect(text).toContain(`${row("0.25")} 2\n`);
    expect(text).toContain(`${row("30")} 2\n`);
    expect(text).toContain(`${row("+Inf")} 3\n`);
    expect(text).toContain('voiceloc_http_request_duration_seconds_sum{method="GET",route="/hist/:id",status="200"} 50.203');
    expect(text).toContain('voiceloc_http_request_duration_seconds_count{method="GET",route="/hist/:id",status="200"} 3');
  });
});
