// The spool against a hostile local user and against damage: a directory
// another user could write in or redirect is refused before anything in it
// is read, files planted in it are never followed or delivered, a spool over
// maxSpoolBytes is refused on open, a corrupt record is refused wherever it
// is while only a torn tail is cut, and reopening a large spool takes
// bounded memory (measured in a child process).
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync, spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { appendFile, chmod, chown, link, lstat, mkdir, open, readdir, readFile, stat, symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

import { RunstreamClient, SpoolCorruptError, SpoolFullError, SpoolUnsafeError } from "../src/index.js";
import { encodeAckRecord, encodeEventRecord, Spool, type SpooledEvent } from "../src/spool.js";
import { tempDir } from "./env.js";

const NOBODY = 65534;
const isRoot = process.geteuid?.() === 0;
const needRoot = isRoot ? {} : { skip: "needs root, to give files to another user (uid 65534, nobody)" };
const memoryChild = fileURLToPath(new URL("./spool-memory-child.js", import.meta.url));

function event(runId: string, i: number, pad = 0): SpooledEvent {
  return {
    eventId: randomUUID(),
    eventType: "StepStarted",
    runId,
    stepId: `s${i}`,
    tenantId: "tenant_ts",
    projectId: "proj",
    environmentId: "test",
    planId: "plan_ts",
    planVersion: "1",
    engineAttemptId: 1,
    logicalAttemptId: 1,
    emittedAt: "2026-02-16T10:30:00.123Z",
    idempotencyKey: "0".repeat(64),
    payload: { note: "x".repeat(pad) },
  };
}

const quiet = { warn: () => {} };

/** A spool in dir holding n events of run (closed again). */
async function fill(dir: string, run: string, n: number, maxBytes = 1 << 20): Promise<void> {
  const s = await Spool.open(dir, { maxBytes, ...quiet });
  for (let i = 0; i < n; i++) await s.append([event(run, i)]);
  await s.close();
}

async function segments(dir: string): Promise<string[]> {
  return (await readdir(dir)).filter((n) => n.startsWith("seg-")).sort().map((n) => join(dir, n));
}

async function snapshot(dir: string): Promise<Map<string, string>> {
  const m = new Map<string, string>();
  for (const n of (await readdir(dir)).sort()) {
    const st = await lstat(join(dir, n));
    m.set(n, st.isFile() ? (await readFile(join(dir, n))).toString("hex") : `${st.mode}`);
  }
  return m;
}

async function rejectsUnsafe(p: Promise<unknown>, ...want: string[]): Promise<SpoolUnsafeError> {
  let got: unknown;
  await assert.rejects(p, (e: unknown) => ((got = e), true));
  assert.ok(got instanceof SpoolUnsafeError, `want SpoolUnsafeError, got ${String(got)}`);
  for (const w of want) assert.ok(got.message.includes(w), `"${got.message}" does not say "${w}"`);
  return got;
}

test("a spool directory that does not exist is created 0700", async (t) => {
  const dir = join(await tempDir(t), "a", "spool");
  const s = await Spool.open(dir, { maxBytes: 1 << 20, ...quiet });
  await s.close();
  assert.equal((await lstat(dir)).mode & 0o777, 0o700);
});

for (const c of [
  { name: "world-writable", mode: 0o777, want: ["writable by its group or by others", "mode 0777", "chmod 0700"] },
  { name: "world-writable with the sticky bit", mode: 0o1777, want: ["writable by its group or by others", "chmod 0700"] },
  { name: "group-writable", mode: 0o770, want: ["mode 0770", "chmod 0700"] },
]) {
  test(`a ${c.name} spool directory is SpoolUnsafeError saying how to fix it; nothing is created in it`, async (t) => {
    const dir = join(await tempDir(t), "spool");
    await mkdir(dir, { mode: 0o700 });
    await chmod(dir, c.mode);
    const e = await rejectsUnsafe(Spool.open(dir, { maxBytes: 1 << 20, ...quiet }), dir, ...c.want);
    assert.equal(e.path, dir);
    assert.deepEqual(await readdir(dir), []);
  });
}

test("a spool directory owned by another user is SpoolUnsafeError", needRoot, async (t) => {
  const dir = join(await tempDir(t), "spool");
  await mkdir(dir, { mode: 0o700 });
  await chown(dir, NOBODY, NOBODY);
  await rejectsUnsafe(Spool.open(dir, { maxBytes: 1 << 20, ...quiet }), dir, `owned by uid ${NOBODY}`, "chown 0 ");
  assert.deepEqual(await readdir(dir), []);
});

test("a symlinked spool directory is SpoolUnsafeError, even to a directory of ours", async (t) => {
  const base = await tempDir(t);
  const real = join(base, "real");
  await mkdir(real, { mode: 0o700 });
  const linked = join(base, "linked");
  await symlink(real, linked);
  await rejectsUnsafe(Spool.open(linked, { maxBytes: 1 << 20, ...quiet }), linked, "symbolic link", "real directory");
  assert.deepEqual(await readdir(real), []);
});

test("a LOCK symlink to a victim file is SpoolUnsafeError, and the victim is unchanged", async (t) => {
  for (const inside of [false, true]) {
    const dir = await tempDir(t);
    const victim = inside ? join(dir, "notes") : join(await tempDir(t), "victim");
    await writeFile(victim, "precious\n", { mode: 0o600 });
    await symlink(inside ? "notes" : victim, join(dir, "LOCK"));
    await rejectsUnsafe(Spool.open(dir, { maxBytes: 1 << 20, ...quiet }), join(dir, "LOCK"), "symbolic link");
    assert.equal(await readFile(victim, "utf8"), "precious\n");
    assert.ok((await lstat(join(dir, "LOCK"))).isSymbolicLink(), "the planted link is left for inspection");
  }
});

test("a planted segment symlink is SpoolUnsafeError and its events are never delivered", async (t) => {
  const elsewhere = await tempDir(t);
  await fill(elsewhere, "planted-run", 3);
  const [seg] = await segments(elsewhere);
  const dir = await tempDir(t);
  await symlink(seg, join(dir, "seg-000000000001.log"));
  let calls = 0;
  const c = new RunstreamClient({ url: "http://127.0.0.1:1", spoolDir: dir, fetch: async () => (calls++, new Response("{}")) });
  t.after(() => c.close());
  await rejectsUnsafe(c.start(), "seg-000000000001.log is a symbolic link");
  await rejectsUnsafe(c.drain(), "symbolic link");
  assert.equal(calls, 0);
});

test("a segment hard-linked, writable by others, or not a regular file is SpoolUnsafeError", async (t) => {
  const cases: [string, (dir: string, seg: string) => Promise<void>, string][] = [
    ["hard link", async (dir, seg) => void (await link(seg, join(dir, "copy"))), "2 hard links"],
    ["mode 0666", async (_dir, seg) => chmod(seg, 0o666), "writable by its group or by others"],
    ["FIFO", async (dir, seg) => void execFileSync("mkfifo", [join(dir, "seg-000000000009.log")]), "seg-000000000009.log is not a regular file"],
  ];
  for (const [name, plant, want] of cases) {
    const dir = await tempDir(t);
    await fill(dir, "r", 2);
    const [seg] = await segments(dir);
    await plant(dir, seg);
    await rejectsUnsafe(Spool.open(dir, { maxBytes: 1 << 20, ...quiet }), want);
    assert.ok(true, name);
  }
});

test("an event another user planted in a 0777 spool directory is never delivered, before or after the directory is made 0700", needRoot, async (t) => {
  const dir = await tempDir(t);
  await fill(dir, "planted-run", 3);
  for (const n of await readdir(dir)) await chown(join(dir, n), NOBODY, NOBODY);
  await chmod(dir, 0o777);
  let calls = 0;
  const fake: typeof fetch = async () => (calls++, new Response("{}", { status: 500 }));
  const c1 = new RunstreamClient({ url: "http://127.0.0.1:1", spoolDir: dir, fetch: fake });
  t.after(() => c1.close());
  await rejectsUnsafe(c1.start(), "mode 0777");
  await chmod(dir, 0o700);
  const c2 = new RunstreamClient({ url: "http://127.0.0.1:1", spoolDir: dir, fetch: fake });
  t.after(() => c2.close());
  await rejectsUnsafe(c2.start(), `owned by uid ${NOBODY}`);
  await rejectsUnsafe(c2.drain(), `owned by uid ${NOBODY}`);
  assert.equal(calls, 0);
});

test("a rejected.ndjson symlink is never written through", async (t) => {
  const dir = await tempDir(t);
  const victim = join(await tempDir(t), "victim");
  await writeFile(victim, "precious\n", { mode: 0o600 });
  const s = await Spool.open(dir, { maxBytes: 1 << 20, ...quiet });
  t.after(() => s.close());
  const [rec] = await s.append([event("r", 0)]);
  await symlink(victim, join(dir, "rejected.ndjson"));
  await rejectsUnsafe(s.reject(rec, new Error("refused")), "rejected.ndjson is a symbolic link");
  assert.equal(await readFile(victim, "utf8"), "precious\n");
  assert.equal(s.size, 1, "the event stays spooled");
});

test("a corrupt last complete record is SpoolCorruptError naming the file and offset, not cut", async (t) => {
  const dir = await tempDir(t);
  await fill(dir, "r", 3);
  const [seg] = await segments(dir);
  const data = await readFile(seg);
  const last = data.lastIndexOf(0x0a, data.length - 2) + 1;
  data[data.length - 5] ^= 0x01; // one bit of the last record, its newline kept
  await writeFile(seg, data);
  const before = await snapshot(dir);
  await assert.rejects(Spool.open(dir, { maxBytes: 1 << 20, ...quiet }), (e: unknown) => {
    assert.ok(e instanceof SpoolCorruptError, String(e));
    assert.equal(e.file, seg);
    assert.equal(e.offset, last);
    assert.match(e.message, new RegExp(`${seg}.*byte offset ${last}.*nothing was deleted`));
    return true;
  });
  assert.deepEqual(await snapshot(dir), before);
});

test("a corrupt record in an older segment is SpoolCorruptError; a torn tail of the last is cut", async (t) => {
  const dir = await tempDir(t);
  const s = await Spool.open(dir, { maxBytes: 1 << 20, segmentBytes: 4096, ...quiet });
  for (let i = 0; i < 30; i++) await s.append([event("r", i)]);
  await s.close();
  const segs = await segments(dir);
  assert.ok(segs.length >= 3);
  // A torn tail of the last segment alone: cut, 30 events kept.
  await appendFile(segs[segs.length - 1], '0badc0de {"n":31,"e":{"ru');
  const warnings: string[] = [];
  const s2 = await Spool.open(dir, { maxBytes: 1 << 20, warn: (m) => warnings.push(m) });
  assert.equal(s2.size, 30);
  assert.ok(warnings.some((w) => w.includes("torn last record")), warnings.join("\n"));
  await s2.close();
  // The first segment's second record damaged: refused, nothing touched.
  const data = await readFile(segs[0]);
  const second = data.indexOf(0x0a) + 1;
  data[second + 30] ^= 0x20;
  await writeFile(segs[0], data);
  const before = await snapshot(dir);
  await assert.rejects(Spool.open(dir, { maxBytes: 1 << 20, ...quiet }), (e: unknown) => {
    assert.ok(e instanceof SpoolCorruptError, String(e));
    assert.equal(e.file, segs[0]);
    assert.equal(e.offset, second);
    return true;
  });
  assert.deepEqual(await snapshot(dir), before);
  // Unterminated bytes at the end of a segment that is not the last: damage, not a torn write.
  const dir2 = await tempDir(t);
  const s3 = await Spool.open(dir2, { maxBytes: 1 << 20, segmentBytes: 4096, ...quiet });
  for (let i = 0; i < 30; i++) await s3.append([event("r", i)]);
  await s3.close();
  const segs2 = await segments(dir2);
  const size = (await stat(segs2[0])).size;
  await appendFile(segs2[0], "0badc0de {");
  await assert.rejects(Spool.open(dir2, { maxBytes: 1 << 20, ...quiet }), (e: unknown) => {
    assert.ok(e instanceof SpoolCorruptError, String(e));
    assert.equal(e.offset, size);
    return true;
  });
});

test("a spool holding more than maxSpoolBytes is SpoolFullError on open, before it is read; with the cap raised it opens", async (t) => {
  const dir = await tempDir(t);
  const s = await Spool.open(dir, { maxBytes: 1 << 20, ...quiet });
  for (let i = 0; i < 20; i++) await s.append([event("r", i, 500)]);
  await s.close();
  let total = 0;
  for (const f of await segments(dir)) total += (await stat(f)).size;
  const before = await snapshot(dir);
  await assert.rejects(Spool.open(dir, { maxBytes: 8192, ...quiet }), (e: unknown) => {
    assert.ok(e instanceof SpoolFullError, String(e));
    assert.equal(e.maxSpoolBytes, 8192);
    for (const w of [dir, `holds ${total} bytes`, "maxSpoolBytes (8192)", `at least ${total}`]) assert.ok(e.message.includes(w), `"${e.message}" does not say "${w}"`);
    return true;
  });
  assert.deepEqual(await snapshot(dir), before);
  const s2 = await Spool.open(dir, { maxBytes: total, ...quiet });
  assert.equal(s2.size, 20);
  await s2.close();
});

test("a full spool freed one delivery at a time never holds more than maxSpoolBytes, so it reopens", async (t) => {
  const dir = await tempDir(t);
  const cap = 16384;
  const s = await Spool.open(dir, { maxBytes: cap, segmentBytes: 4096, ...quiet });
  // A run whose event stays: no segment can be removed behind it.
  await s.append([event("stuck", 0)]);
  let n = 0;
  for (;;) {
    try {
      await s.append([event("r", n)]);
      n++;
    } catch (e) {
      assert.ok(e instanceof SpoolFullError, String(e));
      break;
    }
  }
  assert.ok(n >= 10, `spooled ${n}`);
  const onDisk = async () => {
    let b = 0;
    for (const f of await segments(dir)) b += (await stat(f)).size;
    return b;
  };
  // Acks one event a record (the most they cost).
  for (let i = 0; i < n; i++) {
    const [rec] = await s.eventsOf("r", 1);
    await s.ack([rec.n]);
    const b = await onDisk();
    assert.ok(b <= cap, `after ${i + 1} acks the segments hold ${b} bytes, over maxSpoolBytes ${cap}`);
  }
  await s.close();
  const s2 = await Spool.open(dir, { maxBytes: cap, ...quiet });
  assert.equal(s2.size, 1);
  assert.equal(s2.pendingFor("stuck"), 1);
  await s2.close();
});

test("events read back from disk are the ones appended, in order, across acks, segments and a reopen", async (t) => {
  const dir = await tempDir(t);
  const s = await Spool.open(dir, { maxBytes: 4 << 20, segmentBytes: 8192, ...quiet });
  const appended = new Map<string, SpooledEvent[]>();
  for (let i = 0; i < 400; i++) {
    const run = `r${i % 7}`;
    const e = event(run, appended.get(run)?.length ?? 0, i % 50);
    appended.set(run, [...(appended.get(run) ?? []), e]);
    await s.append([e]);
  }
  // Deliver r0's first 10 and all of r1, and one of r2 out of order.
  const r0 = await s.eventsOf("r0", 10);
  assert.deepEqual(r0.map((r) => r.event), appended.get("r0")!.slice(0, 10));
  assert.deepEqual(r0.map((r) => r.json), appended.get("r0")!.slice(0, 10).map((e) => JSON.stringify(e)));
  await s.ack(r0.map((r) => r.n));
  for (;;) {
    const recs = await s.eventsOf("r1", 7);
    if (recs.length === 0) break;
    await s.ack(recs.map((r) => r.n));
  }
  const r2 = await s.eventsOf("r2", 5);
  await s.ack([r2[3].n]);
  await s.close();
  const s2 = await Spool.open(dir, { maxBytes: 4 << 20, segmentBytes: 8192, ...quiet });
  t.after(() => s2.close());
  assert.equal(s2.pendingFor("r1"), 0);
  assert.deepEqual((await s2.eventsOf("r0")).map((r) => r.event), appended.get("r0")!.slice(10));
  const want2 = appended.get("r2")!.filter((_, i) => i !== 3);
  assert.deepEqual((await s2.eventsOf("r2")).map((r) => r.event), want2);
  assert.equal(s2.size, 400 - 10 - appended.get("r1")!.length - 1);
  assert.deepEqual(s2.runs(), ["r2", "r3", "r4", "r5", "r6", "r0"]);
  // eventsOf reads at most about 1 MiB at a time, at least one record.
  const big = await Spool.open(await tempDir(t), { maxBytes: 64 << 20, ...quiet });
  t.after(() => big.close());
  for (let i = 0; i < 12; i++) await big.append([event("big", i, 200_000)]);
  const first = await big.eventsOf("big");
  assert.ok(first.length >= 4 && first.length < 12, `read ${first.length} events of 200 kB`);
});

test("reopening a 300 MiB spool takes bounded memory, and so does draining it (heap capped at 64 MB in a child process)", async (t) => {
  const dir = await tempDir(t);
  const w = await writeLargeSpool(dir, 300 << 20, 2000, 100);
  const proc = spawn(
    process.execPath,
    // Semi-spaces of 1 MB: the young generation may not grow to hold garbage,
    // so that RSS shows what is held.
    ["--max-old-space-size=64", "--max-semi-space-size=1", memoryChild, dir, String(512 << 20), String(DRAIN_REQUESTS)],
    { stdio: ["ignore", "pipe", "pipe"] },
  );
  let out = "";
  let err = "";
  proc.stdout.on("data", (d) => (out += d));
  proc.stderr.on("data", (d) => (err += d));
  const code = await new Promise<number | null>((r) => proc.on("exit", (c) => r(c)));
  assert.equal(code, 0, `the child failed (a heap over 64 MB ends it): ${err.slice(-2000)}`);
  const res = JSON.parse(out);
  const MiB = 1 << 20;
  const grew = res.peak.rss - res.baseline.rss;
  t.diagnostic(
    `spool ${(w.bytes / MiB).toFixed(0)} MiB, ${w.events} events of ${w.runs} runs (written in ${w.ms} ms); reopened in ${res.openMs} ms, ` +
      `${res.delivered} events of ${res.runs} runs delivered in ${res.drainMs} ms; rss grew by ${(grew / MiB).toFixed(1)} MiB ` +
      `(peak ${(res.peak.rss / MiB).toFixed(1)}), peak heapUsed ${(res.peak.heapUsed / MiB).toFixed(1)} MiB, external ${(res.peak.external / MiB).toFixed(1)} MiB`,
  );
  assert.equal(res.pending, w.events - w.acked);
  assert.ok(res.runs >= DRAIN_REQUESTS - 1 && res.delivered > 0, `delivered ${res.delivered} events of ${res.runs} runs`);
  assert.equal(res.remaining, res.pending - res.delivered);
  assert.equal(res.outOfOrder, "");
  assert.ok(grew <= 64 * MiB, `rss grew by ${(grew / MiB).toFixed(1)} MiB, over 64`);
  assert.ok(res.peak.heapUsed + res.peak.external <= 64 * MiB, `heap ${(res.peak.heapUsed / MiB).toFixed(1)} + external ${(res.peak.external / MiB).toFixed(1)} MiB, over 64`);
});

/** How many requests the child's fake API accepts before it answers 503 (the drain stops). */
const DRAIN_REQUESTS = 300;

/**
 * Writes a spool of about `bytes` into dir, as the client would have: events
 * of `runs` runs taking turns (each run's stepIds s0, s1, ... in order), then
 * acks of every event of the first `ackedRuns` runs.
 */
async function writeLargeSpool(dir: string, bytes: number, runs: number, ackedRuns: number) {
  const t0 = performance.now();
  const segBytes = 4 << 20;
  let n = 0;
  let total = 0;
  let seg = 0;
  let segSize = segBytes;
  let fh: Awaited<ReturnType<typeof open>> | null = null;
  let parts: Buffer[] = [];
  const flush = async () => {
    if (fh !== null && parts.length > 0) await fh.write(Buffer.concat(parts));
    parts = [];
  };
  const put = async (line: Buffer) => {
    if (segSize >= segBytes) {
      await flush();
      await fh?.close();
      fh = await open(join(dir, `seg-${String(++seg).padStart(12, "0")}.log`), "wx", 0o600);
      segSize = 0;
    }
    parts.push(line);
    segSize += line.length;
    total += line.length;
    if (parts.length >= 2000) await flush();
  };
  const perRun = new Array<number>(runs).fill(0);
  const acked: number[] = [];
  const pad = "x".repeat(400);
  while (total < bytes) {
    const r = n % runs;
    n++;
    const json =
      `{"eventId":"${randomUUID()}","eventType":"StepStarted","runId":"run-${r}","stepId":"s${perRun[r]++}","tenantId":"tenant_ts",` +
      `"projectId":"proj","environmentId":"test","planId":"plan_ts","planVersion":"1","engineAttemptId":1,"logicalAttemptId":1,` +
      `"emittedAt":"2026-02-16T10:30:00.123Z","idempotencyKey":"${"0".repeat(64)}","payload":{"note":"${pad.slice(0, 100 + (n % 300))}"}}`;
    if (r < ackedRuns) acked.push(n);
    await put(encodeEventRecord(n, json));
  }
  for (let i = 0; i < acked.length; i += 5000) await put(encodeAckRecord(acked.slice(i, i + 5000)));
  await flush();
  await (fh as Awaited<ReturnType<typeof open>> | null)?.close();
  return { bytes: total, events: n, acked: acked.length, runs, ms: Math.round(performance.now() - t0) };
}
