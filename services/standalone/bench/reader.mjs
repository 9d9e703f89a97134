// The concurrency benchmark's reader, in its own plain `node` process: authenticated
// GET /v1/audio_books/{id} at a fixed overall rate (open loop: a request goes out when it is due,
// whether or not earlier ones have answered, so a slow server cannot slow the load down and hide
// its own latency), round robin over the given (key, id) pairs.
// Usage: node reader.mjs <base-url> <requests-per-second> <key> <id> [<key> <id>...]
// On SIGTERM it waits for the requests in flight (at most 10 s), prints one JSON line and exits.
import { Agent, request } from "node:http";

const [base, rateArg, ...rest] = process.argv.slice(2);
const rate = Number(rateArg);
const targets = [];
for (let i = 0; i + 1 < rest.length; i += 2) targets.push({ key: rest[i], path: `/v1/audio_books/${rest[i + 1]}` });
const url = new URL(base);
const agent = new Agent({ keepAlive: true, maxSockets: 64 });

const latencies = [];
const statuses = {};
let errors = 0;
const errorCodes = {};
let inFlight = 0;
let sent = 0;

function once(target) {
  const started = process.hrtime.bigint();
  inFlight += 1;
  const req = request(
    { host: url.hostname, port: url.port, path: target.path, method: "GET", agent, headers: { "API-KEY": target.key } },
    (res) => {
      res.resume();
      res.on("end", () => {
        latencies.push(Number(process.hrtime.bigint() - started) / 1e6);
        statuses[res.statusCode] = (statuses[res.statusCode] ?? 0) + 1;
        inFlight -= 1;
      });
    },
  );
  req.on("error", (error) => {
    errors += 1;
    errorCodes[error.code ?? error.message] = (errorCodes[error.code ?? error.message] ?? 0) + 1;
    inFlight -= 1;
  });
  req.end();
}

const start = Date.now();
const timer = setInterval(() => {
  const due = Math.floor(((Date.now() - start) / 1000) * rate);
  while (sent < due) {
    once(targets[sent % targets.length]);
    sent += 1;
  }
}, 5);

function percentile(sorted, p) {
  if (sorted.length === 0) return null;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}

process.on("SIGTERM", () => {
  clearInterval(timer);
  const deadline = Date.now() + 10_000;
  const finish = () => {
    if (inFlight > 0 && Date.now() < deadline) return void setTimeout(finish, 20);
    const sorted = [...latencies].sort((a, b) => a - b);
    const ok = Object.entries(statuses).reduce((n, [s, c]) => n + (s.startsWith("2") ? c : 0), 0);
    const summary = {
      seconds: (Date.now() - start) / 1000,
      sent,
      answered: latencies.length,
      non2xx: latencies.length - ok,
      errors,
      errorCodes,
      unanswered: inFlight,
      statuses,
      p50: percentile(sorted, 50),
      p90: percentile(sorted, 90),
      p99: percentile(sorted, 99),
      max: sorted.at(-1) ?? null,
    };
    process.stdout.write(`${JSON.stringify(summary)}\n`);
    process.exit(0);
  };
  finish();
});
