#!/usr/bin/env node
// Appends --events events through the TypeScript client (RunstreamClient.append,
// one event per request) with --concurrency appends in flight, against a
// running runstream API, and prints one JSON line:
//   {"eventsPerSecond": ..., "events": N, "concurrency": C, "seconds": ..., "p50Ms": ..., "p99Ms": ..., "errors": 0}
// Flags (all optional but --url):
//   --url URL          the API's base URL, e.g. http://127.0.0.1:8080
//   --token TOKEN      a bearer token of RUNSTREAM_AUTH_TOKENS (none: development mode)
//   --events N         events to append (default 10000)
//   --concurrency C    appends in flight (default 16); each worker writes runs of its own
//   --tenant ID        the events' tenantId (default tenant_bench; with a token, the token's tenant)
//   --raw              the baseline: the same events, complete (eventId, emittedAt, key), posted
//                      with plain fetch instead of the client
// Needs the compiled client: npm ci && npm run build in clients/typescript.
// Exit status 1 when any append failed (the line is still printed).
import { randomUUID } from "node:crypto";
import { parseArgs } from "node:util";

let client;
try {
  client = await import("../dist/src/index.js");
} catch {
  console.error("bench/append.mjs: the client is not built; run `npm ci && npm run build` in clients/typescript");
  process.exit(2);
}

const { values } = parseArgs({
  options: {
    url: { type: "string" },
    token: { type: "string" },
    events: { type: "string", default: "10000" },
    concurrency: { type: "string", default: "16" },
    tenant: { type: "string", default: "tenant_bench" },
    raw: { type: "boolean", default: false },
  },
});
const events = Number(values.events);
const concurrency = Number(values.concurrency);
if (!values.url || !(events > 0) || !(concurrency > 0)) {
  console.error("usage: node bench/append.mjs --url URL [--token T] [--events N] [--concurrency C] [--tenant ID]");
  process.exit(2);
}

const c = new client.RunstreamClient({ url: values.url, token: values.token, writeLatencyBudgetMs: 30_000 });
const STEPS_PER_RUN = 50;
const types = ["StepStarted", "StepCompleted"];

function event(runId, i) {
  return {
    eventType: types[i % 2],
    runId,
    stepId: `step-${Math.floor(i / 2)}`,
    tenantId: values.tenant,
    projectId: "bench",
    environmentId: "bench",
    planId: "plan_bench",
    planVersion: "1",
    engineAttemptId: 1,
    logicalAttemptId: 1,
    payload: { durationMs: 12 },
  };
}

const headers = { "content-type": "application/json" };
if (values.token) headers.authorization = `Bearer ${values.token}`;
const url = values.url.replace(/\/+$/, "") + "/v1/events";

// raw posts a complete event with fetch, no client: the baseline.
async function raw(e) {
  e.eventId = randomUUID();
  e.emittedAt = new Date().toISOString();
  e.idempotencyKey = client.idempotencyKey(e);
  const res = await fetch(url, { method: "POST", headers, body: JSON.stringify(e) });
  if (res.status !== 201 && res.status !== 200) throw new Error(`HTTP ${res.status}: ${await res.text()}`);
  await res.arrayBuffer();
}

let next = 0;
let errors = 0;
let firstError;
const latencies = new Float64Array(events);

async function worker() {
  let runId = randomUUID();
  let k = 0;
  for (;;) {
    const n = next++;
    if (n >= events) return;
    if (k === STEPS_PER_RUN * 2) {
      runId = randomUUID();
      k = 0;
    }
    const t0 = performance.now();
    try {
      await (values.raw ? raw(event(runId, k++)) : c.append(event(runId, k++)));
    } catch (e) {
      errors++;
      firstError ??= e;
    }
    latencies[n] = performance.now() - t0;
  }
}

// Warm-up: connections and the JIT, not counted.
await Promise.all(Array.from({ length: concurrency }, (_, w) => c.append(event(randomUUID(), 0)).catch(() => {})));

const start = performance.now();
await Promise.all(Array.from({ length: concurrency }, worker));
const seconds = (performance.now() - start) / 1000;
await c.close();

const sorted = Array.from(latencies).sort((a, b) => a - b);
const pct = (p) => Math.round(sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] * 1000) / 1000;
console.log(
  JSON.stringify({
    eventsPerSecond: Math.round((events - errors) / seconds),
    client: values.raw ? "raw-fetch" : "typescript",
    events,
    concurrency,
    seconds: Math.round(seconds * 1000) / 1000,
    p50Ms: pct(50),
    p99Ms: pct(99),
    errors,
  }),
);
if (errors > 0) {
  console.error(`bench/append.mjs: ${errors} appends failed; the first: ${firstError?.stack ?? firstError}`);
  process.exit(1);
}
