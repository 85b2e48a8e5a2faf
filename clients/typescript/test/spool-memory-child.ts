// The process whose memory the large-spool test measures: it reopens a
// spool another process wrote (through a RunstreamClient, as a restarted
// producer would) and drains it to a fake API that accepts every event of
// its first `requests` requests, checking that each run's events arrive in
// append order, and then answers 503 (the drain stops there). It samples its
// memory all along and prints one JSON line:
//   {"pending": N, "delivered": N, "remaining": N, "runs": N, "outOfOrder": "",
//    "openMs": T, "drainMs": T, "baseline": {...},
//    "peak": {"rss": B, "heapUsed": B, "external": B}}
// argv: spoolDir maxSpoolBytes requests
import { RunstreamClient } from "../src/index.js";

const [dir, maxBytes, requests] = process.argv.slice(2);
let answered = 0;

const baseline = process.memoryUsage();
const peak = { rss: baseline.rss, heapUsed: baseline.heapUsed, external: baseline.external };
const sample = () => {
  const m = process.memoryUsage();
  peak.rss = Math.max(peak.rss, m.rss);
  peak.heapUsed = Math.max(peak.heapUsed, m.heapUsed);
  peak.external = Math.max(peak.external, m.external);
};
const timer = setInterval(sample, 2);

// Per run, the last stepId delivered: "s<i>", i growing by one.
const last = new Map<string, number>();
let outOfOrder = "";
const fakeAPI: typeof fetch = async (_input, init) => {
  if (answered++ >= Number(requests)) {
    return new Response(JSON.stringify({ error: { code: "UNAVAILABLE", message: "enough for the test" } }), {
      status: 503,
      headers: { "content-type": "application/json", "retry-after": "60" },
    });
  }
  const body = JSON.parse(String(init?.body)) as { events: { runId: string; stepId: string; eventId: string }[] };
  for (const e of body.events) {
    const i = Number(e.stepId.slice(1));
    const prev = last.get(e.runId) ?? -1;
    if (i !== prev + 1 && !outOfOrder) outOfOrder = `run ${e.runId}: ${e.stepId} after s${prev}`;
    last.set(e.runId, i);
  }
  sample();
  return new Response(
    JSON.stringify({ results: body.events.map((e, k) => ({ eventId: e.eventId, runId: e.runId, runSeq: k + 1, idempotent: false })) }),
    { status: 200, headers: { "content-type": "application/json" } },
  );
};

const c = new RunstreamClient({ url: "http://127.0.0.1:1", spoolDir: dir, maxSpoolBytes: Number(maxBytes), fetch: fakeAPI, onWarning: () => {} });
const t0 = performance.now();
const pending = await c.spooled();
const openMs = performance.now() - t0;
sample();
const t1 = performance.now();
const d = await c.drain();
const drainMs = performance.now() - t1;
await c.close();
sample();
clearInterval(timer);
process.stdout.write(
  JSON.stringify({ pending, ...d, runs: last.size, outOfOrder, openMs: Math.round(openMs), drainMs: Math.round(drainMs), baseline, peak }) + "\n",
);
