// The spool: it survives a SIGKILL of the process that spooled, is drained
// by a new client to the real API with nothing lost and per-run order
// held, duplicates are harmless; a corrupt spool is an error that deletes
// nothing, a torn tail is cut, a full spool refuses new events and keeps
// the old ones, two clients never share one.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { cp, readdir, readFile, writeFile, appendFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

import { RunstreamClient, SpoolCorruptError, SpoolFullError, SpoolLockedError } from "../src/index.js";
import { Spool } from "../src/spool.js";
import { api, SLOW_OK, events, full, input, newRun, switchableFetch, tempDir, unreachable } from "./env.js";

const child = fileURLToPath(new URL("./spool-child.js", import.meta.url));

async function segments(dir: string): Promise<string[]> {
  return (await readdir(dir)).filter((n) => n.startsWith("seg-")).map((n) => join(dir, n));
}

async function snapshot(dir: string): Promise<Map<string, Buffer>> {
  const m = new Map<string, Buffer>();
  for (const n of (await readdir(dir)).sort()) m.set(n, await readFile(join(dir, n)));
  return m;
}

test("a spool survives SIGKILL of the producer; a new client drains it to the API: none lost, per-run order held, duplicates harmless", async (t) => {
  const dir = await tempDir(t);
  const runs = [newRun(), newRun(), newRun()];
  const proc = spawn(process.execPath, [child, dir, unreachable, api.token, api.tenant, ...runs], { stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  let err = "";
  proc.stdout.on("data", (d) => (out += d));
  proc.stderr.on("data", (d) => (err += d));
  const exited = new Promise<NodeJS.Signals | number | null>((r) => proc.on("exit", (code, sig) => r(sig ?? code)));
  const until = async (cond: () => boolean, what: string) => {
    const deadline = Date.now() + 20000;
    while (!cond()) {
      assert.ok(Date.now() < deadline, `${what} within 20s; child stderr:\n${err}`);
      assert.equal(proc.exitCode, null, `the child exited early:\n${err}`);
      await new Promise((r) => setTimeout(r, 10));
    }
  };
  await until(() => out.includes("ready\n"), "the child to start");

  // While the producer lives, nobody else may open its spool.
  const intruder = new RunstreamClient({ url: api.url, writeLatencyBudgetMs: SLOW_OK, token: api.token, spoolDir: dir });
  await assert.rejects(intruder.start(), SpoolLockedError);
  await intruder.close();

  await until(() => out.split("\n").filter((l) => l.startsWith("spooled ")).length >= 45, "45 spooled events");
  proc.kill("SIGKILL");
  assert.equal(await exited, "SIGKILL");

  const acked = new Map<string, string[]>(runs.map((r) => [r, []]));
  for (const line of out.split("\n")) {
    const [word, run, step] = line.split(" ");
    if (word === "spooled") acked.get(run)!.push(step);
  }

  // Keep a copy of the spool as the crash left it, to drain it twice.
  const copy = await tempDir(t);
  await cp(dir, copy, { recursive: true });

  const warnings: string[] = [];
  const c = new RunstreamClient({ url: api.url, writeLatencyBudgetMs: SLOW_OK, token: api.token, spoolDir: dir, onWarning: (m) => warnings.push(m) });
  t.after(() => c.close());
  const before = await c.spooled();
  const total = [...acked.values()].reduce((a, l) => a + l.length, 0);
  assert.ok(before >= total && before <= total + runs.length, `spool holds ${before}, the child acknowledged ${total}`);
  assert.ok(warnings.some((w) => w.includes("took over the lock")), warnings.join("\n"));
  const d = await c.drain();
  assert.equal(d.remaining, 0);
  assert.equal(d.delivered, before);
  for (const run of runs) {
    const stored = await events(run);
    const steps = stored.map((e) => e.stepId);
    const want = acked.get(run)!;
    // Every acknowledged event is there, in append order; at most the one
    // append in flight at the kill follows them.
    assert.deepEqual(steps.slice(0, want.length), want, `run ${run}`);
    assert.ok(steps.length <= want.length + 1);
    assert.deepEqual(
      stored.map((e) => e.runSeq),
      stored.map((_, i) => i + 1),
    );
    assert.deepEqual(steps, steps.map((_, i) => `s${i}`), "runSeq order is append order");
  }

  // The crash-time copy again: every event is a duplicate, answered 200, no second row.
  const again = new RunstreamClient({ url: api.url, writeLatencyBudgetMs: SLOW_OK, token: api.token, spoolDir: copy, onWarning: () => {} });
  t.after(() => again.close());
  const d2 = await again.drain();
  assert.deepEqual(d2, { delivered: before, rejected: 0, remaining: 0 });
  for (const run of runs) assert.ok((await events(run)).length <= acked.get(run)!.length + 1);
  const sum = (await Promise.all(runs.map(events))).reduce((a, l) => a + l.length, 0);
  assert.equal(sum, before);
});

test("a corrupt record before the end is SpoolCorruptError naming the file and offset; nothing is deleted or rewritten", async (t) => {
  const dir = await tempDir(t);
  const c = new RunstreamClient({ url: unreachable, spoolDir: dir, writeLatencyBudgetMs: 20 });
  const run = newRun();
  for (let i = 0; i < 5; i++) assert.ok((await c.append(input(run, "StepStarted", `s${i}`))).spooled);
  await c.close();
  const [seg] = await segments(dir);
  const data = await readFile(seg);
  const second = data.indexOf(0x0a) + 1;
  data[second + 40] ^= 0x01; // one bit of the second record
  await writeFile(seg, data);
  const before = await snapshot(dir);

  const c2 = new RunstreamClient({ url: api.url, writeLatencyBudgetMs: SLOW_OK, token: api.token, spoolDir: dir });
  t.after(() => c2.close());
  await assert.rejects(c2.start(), (e: unknown) => {
    assert.ok(e instanceof SpoolCorruptError, String(e));
    assert.equal(e.file, seg);
    assert.equal(e.offset, second);
    assert.match(e.message, new RegExp(`${seg}.*byte offset ${second}`));
    return true;
  });
  // An append for any run meets the same error rather than skipping the spool.
  await assert.rejects(c2.append(input(newRun(), "StepStarted")), SpoolCorruptError);
  assert.deepEqual(await snapshot(dir), before, "the spool was not touched");
  assert.deepEqual(await events(run), []);
});

test("a torn last record is cut with a warning and the records before it are kept", async (t) => {
  const dir = await tempDir(t);
  const c = new RunstreamClient({ url: unreachable, spoolDir: dir, writeLatencyBudgetMs: 20 });
  const run = newRun();
  for (let i = 0; i < 3; i++) assert.ok((await c.append(input(run, "StepStarted", `s${i}`))).spooled);
  await c.close();
  const [seg] = await segments(dir);
  const size = (await readFile(seg)).length;
  await appendFile(seg, '0badc0de {"n":4,"e":{"runId":"'); // a write the crash cut short
  const warnings: string[] = [];
  const c2 = new RunstreamClient({ url: api.url, writeLatencyBudgetMs: SLOW_OK, token: api.token, spoolDir: dir, onWarning: (m) => warnings.push(m) });
  t.after(() => c2.close());
  assert.equal(await c2.spooled(), 3);
  assert.ok(warnings.some((w) => w.includes("torn last record") && w.includes(`byte offset ${size}`)), warnings.join("\n"));
  assert.equal((await readFile(seg)).length, size);
  assert.deepEqual(await c2.drain(), { delivered: 3, rejected: 0, remaining: 0 });
  assert.deepEqual((await events(run)).map((e) => e.stepId), ["s0", "s1", "s2"]);
});

test("a full spool refuses new events with SpoolFullError and loses none it holds", async (t) => {
  const dir = await tempDir(t);
  const c = new RunstreamClient({ url: unreachable, spoolDir: dir, writeLatencyBudgetMs: 20, maxSpoolBytes: 4000 });
  const run = newRun();
  let spooled = 0;
  let full: unknown;
  for (let i = 0; i < 100 && full === undefined; i++) {
    try {
      await c.append(input(run, "StepStarted", `s${i}`));
      spooled++;
    } catch (e) {
      full = e;
    }
  }
  assert.ok(full instanceof SpoolFullError, String(full));
  assert.equal(full.maxSpoolBytes, 4000);
  assert.equal(full.dir, dir);
  assert.ok(spooled >= 3, `spooled ${spooled}`);
  assert.equal(await c.spooled(), spooled);
  await c.close();

  const c2 = new RunstreamClient({ url: api.url, writeLatencyBudgetMs: SLOW_OK, token: api.token, spoolDir: dir, maxSpoolBytes: 4000 });
  t.after(() => c2.close());
  assert.deepEqual(await c2.drain(), { delivered: spooled, rejected: 0, remaining: 0 });
  assert.deepEqual(
    (await events(run)).map((e) => e.stepId),
    Array.from({ length: spooled }, (_, i) => `s${i}`),
  );
  // Drained, it takes events again.
  const sw = switchableFetch(() => true);
  const c3 = new RunstreamClient({ url: api.url, writeLatencyBudgetMs: SLOW_OK, spoolDir: await tempDir(t), fetch: sw.fetch, maxSpoolBytes: 4000 });
  t.after(() => c3.close());
  assert.ok((await c3.append(input(run, "StepStarted", "later"))).spooled);
});

test("a spooled event the API refuses for good goes to rejected.ndjson with a warning; the run's later events flow", async (t) => {
  const dir = await tempDir(t);
  const run = newRun();
  const good1 = full(run, "StepStarted", "a");
  const bad = full(run, "StepStarted", "b");
  bad.idempotencyKey = "f".repeat(64); // written behind the client's back
  const good2 = full(run, "StepStarted", "c");
  const s = await Spool.open(dir, { maxBytes: 1 << 20, warn: () => {} });
  await s.append([good1, bad, good2] as any);
  await s.close();

  const warnings: string[] = [];
  const c = new RunstreamClient({ url: api.url, writeLatencyBudgetMs: SLOW_OK, token: api.token, spoolDir: dir, onWarning: (m) => warnings.push(m) });
  t.after(() => c.close());
  assert.deepEqual(await c.drain(), { delivered: 2, rejected: 1, remaining: 0 });
  assert.deepEqual((await events(run)).map((e) => e.stepId), ["a", "c"]);
  const rejected = (await readFile(join(dir, "rejected.ndjson"), "utf8")).trim().split("\n").map((l) => JSON.parse(l));
  assert.equal(rejected.length, 1);
  assert.equal(rejected[0].event.eventId, bad.eventId);
  assert.equal(rejected[0].error.code, "SCHEMA_VALIDATION_FAILED");
  assert.equal(rejected[0].error.field, "events[1].idempotencyKey");
  assert.ok(warnings.some((w) => w.includes(String(bad.eventId))));
});

test("segments are removed once delivered, and the spool keeps working across many segments", async (t) => {
  const dir = await tempDir(t);
  let down = true;
  const sw = switchableFetch(() => down);
  const s = await Spool.open(dir, { maxBytes: 1 << 20, warn: () => {}, segmentBytes: 2048 });
  const run = newRun();
  const evs = Array.from({ length: 40 }, (_, i) => full(run, "StepStarted", `s${i}`));
  for (const e of evs) await s.append([e] as any);
  assert.ok((await segments(dir)).length > 3, "several segments");
  await s.close();
  const c = new RunstreamClient({ url: api.url, token: api.token, spoolDir: dir, fetch: sw.fetch, writeLatencyBudgetMs: SLOW_OK });
  t.after(() => c.close());
  assert.equal(await c.spooled(), 40);
  down = false;
  assert.deepEqual(await c.drain(), { delivered: 40, rejected: 0, remaining: 0 });
  assert.deepEqual(await segments(dir), [], "a drained spool keeps no segment");
  assert.deepEqual((await events(run)).map((e) => e.stepId), evs.map((e) => e.stepId));
});

test("a spooled event too large for the API goes to rejected.ndjson; the others of its run are delivered around it in order", async (t) => {
  const dir = await tempDir(t);
  const run = newRun();
  const a = full(run, "StepStarted", "a");
  const huge = full(run, "StepStarted", "b");
  huge.payload = { blob: "x".repeat(1_200_000) }; // over the API's 1 MiB body limit
  const c3 = full(run, "StepStarted", "c");
  const s = await Spool.open(dir, { maxBytes: 8 << 20, warn: () => {} });
  await s.append([a, huge, c3] as any);
  await s.close();
  const warnings: string[] = [];
  const c = new RunstreamClient({ url: api.url, writeLatencyBudgetMs: SLOW_OK, token: api.token, spoolDir: dir, onWarning: (m) => warnings.push(m) });
  t.after(() => c.close());
  assert.deepEqual(await c.drain(), { delivered: 2, rejected: 1, remaining: 0 });
  assert.deepEqual((await events(run)).map((e) => e.stepId), ["a", "c"]);
  const rejected = (await readFile(join(dir, "rejected.ndjson"), "utf8")).trim().split("\n").map((l) => JSON.parse(l));
  assert.equal(rejected.length, 1);
  assert.equal(rejected[0].event.eventId, huge.eventId);
  assert.equal(rejected[0].error.code, "PAYLOAD_TOO_LARGE");
  assert.ok(warnings.some((w) => w.includes(String(huge.eventId))));
});
