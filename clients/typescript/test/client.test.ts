// The client against the real API (appends, duplicates, batches, tenants)
// and against small local servers of our own (retries, Retry-After, the
// budget).
import { test } from "node:test";
import assert from "node:assert/strict";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { randomUUID } from "node:crypto";

import { BudgetExceededError, RunstreamClient, RunstreamError } from "../src/index.js";
import { api, SLOW_OK, events, input, newRun, switchableFetch, tempDir, unreachable } from "./env.js";

function recording(): { fetch: typeof fetch; statuses: number[] } {
  const statuses: number[] = [];
  return {
    statuses,
    fetch: async (i, init) => {
      const res = await fetch(i, init);
      statuses.push(res.status);
      return res;
    },
  };
}

test("append: 201 inserted, then 200 for the duplicate with the first write's metadata", async (t) => {
  const rec = recording();
  const c = new RunstreamClient({ url: api.url, writeLatencyBudgetMs: SLOW_OK, token: api.token, fetch: rec.fetch });
  t.after(() => c.close());
  const run = newRun();
  const first = await c.append(input(run, "RunStarted"));
  assert.equal(first.spooled, false);
  if (first.spooled) return;
  assert.equal(first.runSeq, 1);
  assert.equal(first.idempotent, false);
  assert.equal(first.persisted, true);
  const again = await c.append({ ...input(run, "RunStarted"), eventId: randomUUID() });
  assert.equal(again.spooled, false);
  if (again.spooled) return;
  assert.equal(again.idempotent, true);
  assert.equal(again.persisted, false);
  assert.equal(again.eventId, first.eventId);
  assert.equal(again.runSeq, 1);
  assert.deepEqual(rec.statuses, [201, 200]);
  const stored = await events(run);
  assert.equal(stored.length, 1);
  assert.equal(stored[0].tenantId, api.tenant);
});

test("traceparent: the hook's value goes with each append and batch, read at the call; an invalid one or a throwing hook sends none", async (t) => {
  const sent: (string | null)[] = [];
  const capture: typeof fetch = async (i, init) => {
    sent.push(new Headers(init?.headers).get("traceparent"));
    return fetch(i, init);
  };
  let current: string | undefined = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
  const c = new RunstreamClient({
    url: api.url, writeLatencyBudgetMs: SLOW_OK, token: api.token, fetch: capture,
    traceparent: () => {
      if (current === "throw") throw new Error("no tracer");
      return current;
    },
  });
  t.after(() => c.close());
  const run = newRun();
  const appended = c.append(input(run, "RunStarted"));
  current = "00-ffffffffffffffffffffffffffffffff-ffffffffffffffff-01"; // after the call: not this append's
  await appended;
  await c.appendBatch([input(run, "RunQueued")]);
  current = "not a traceparent";
  await c.append(input(run, "StepStarted"));
  current = "throw";
  await c.append(input(run, "StepCompleted"));
  assert.deepEqual(sent, [
    "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
    "00-ffffffffffffffffffffffffffffffff-ffffffffffffffff-01",
    null,
    null,
  ]);
});

test("appendBatch: results in order, one per event; local and API refusals per item", async (t) => {
  const c = new RunstreamClient({ url: api.url, writeLatencyBudgetMs: SLOW_OK, token: api.token });
  t.after(() => c.close());
  const run = newRun();
  const out = await c.appendBatch([
    input(run, "RunStarted"),
    input(run, "StepStarted", "a"),
    { ...input(run, "StepStarted", "b"), runId: "bad|run" },
    input(run, "StepCompleted", "a"),
    { ...input(newRun(), "RunStarted"), tenantId: "tenant_other" },
    input(run, "StepStarted", "a"), // a duplicate of the second
  ]);
  assert.equal(out.length, 6);
  const seqs = out.map((o) => ("runSeq" in o ? o.runSeq : "error" in o ? (o.error as RunstreamError).code : "?"));
  assert.deepEqual(seqs, [1, 2, "SCHEMA_VALIDATION_FAILED", 3, "FORBIDDEN", 2]);
  const bad = (out[2] as { error: RunstreamError }).error;
  assert.equal(bad.field, "events[2].runId");
  assert.equal(bad.local, true);
  assert.equal((out[4] as { error: RunstreamError }).error.status, 403);
  assert.deepEqual(
    (await events(run)).map((e) => `${e.runSeq}:${e.eventType}:${e.stepId ?? ""}`),
    ["1:RunStarted:", "2:StepStarted:a", "3:StepCompleted:a"],
  );
});

test("tenants: another tenant's event is 403 FORBIDDEN and an unknown token 401, neither retried nor spooled", async (t) => {
  const dir = await tempDir(t);
  let calls = 0;
  const counting: typeof fetch = (i, init) => {
    calls++;
    return fetch(i, init);
  };
  const other = new RunstreamClient({ url: api.url, writeLatencyBudgetMs: SLOW_OK, token: api.otherToken, fetch: counting, spoolDir: dir });
  t.after(() => other.close());
  await assert.rejects(other.append(input(newRun(), "StepStarted")), (e: unknown) => {
    assert.ok(e instanceof RunstreamError);
    assert.equal(e.code, "FORBIDDEN");
    assert.equal(e.status, 403);
    assert.equal(e.local, false);
    return true;
  });
  assert.equal(calls, 1);
  const stranger = new RunstreamClient({ url: api.url, writeLatencyBudgetMs: SLOW_OK, token: "no-such-token", fetch: counting });
  t.after(() => stranger.close());
  await assert.rejects(stranger.append(input(newRun(), "StepStarted")), { name: "RunstreamError", code: "UNAUTHENTICATED", status: 401 });
  assert.equal(calls, 2);
  assert.equal(await other.spooled(), 0);
});

// A local server answering from a script of (req) => [status, headers, body].
async function scripted(
  t: { after: (fn: () => Promise<void> | void) => void },
  answer: (n: number, req: IncomingMessage, res: ServerResponse) => void,
): Promise<{ url: string; requests: () => number; times: number[] }> {
  let n = 0;
  const times: number[] = [];
  const srv = createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      times.push(Date.now());
      answer(n++, req, res);
    });
  });
  await new Promise<void>((r) => srv.listen(0, "127.0.0.1", r));
  t.after(() => {
    srv.closeAllConnections();
    return new Promise<void>((r) => srv.close(() => r()));
  });
  return { url: `http://127.0.0.1:${(srv.address() as AddressInfo).port}`, requests: () => n, times };
}

const ok = (res: ServerResponse, status = 201) =>
  res
    .writeHead(status, { "content-type": "application/json" })
    .end(JSON.stringify({ eventId: randomUUID(), runSeq: 1, persistedAt: "2026-02-16T10:30:00.123456Z", idempotent: status === 200, persisted: status === 201 }));
const fail = (res: ServerResponse, status: number, code: string, headers: Record<string, string> = {}) =>
  res
    .writeHead(status, { "content-type": "application/json", ...headers })
    .end(JSON.stringify({ error: { code, message: `scripted ${status}` } }));

test("retries: 503 with Retry-After waits that long, then succeeds", async (t) => {
  const s = await scripted(t, (n, _req, res) => (n === 0 ? fail(res, 503, "UNAVAILABLE", { "retry-after": "1" }) : ok(res)));
  const c = new RunstreamClient({ url: s.url, writeLatencyBudgetMs: 5000 });
  t.after(() => c.close());
  const r = await c.append(input(newRun(), "StepCompleted"));
  assert.equal(r.spooled, false);
  assert.equal(s.requests(), 2);
  const waited = s.times[1] - s.times[0];
  assert.ok(waited >= 950 && waited < 3000, `waited ${waited} ms for Retry-After: 1`);
});

test("retries: 429 and transport errors back off and retry; 400, 401, 403, 404, 413 and 500 are never retried", async (t) => {
  const s = await scripted(t, (n, req, res) => {
    if (n === 0) return fail(res, 429, "UNAVAILABLE");
    if (n === 1) return req.socket.destroy(); // a transport error
    if (n === 2) return fail(res, 502, "UNAVAILABLE");
    return ok(res);
  });
  const c = new RunstreamClient({ url: s.url, writeLatencyBudgetMs: 5000, backoffBaseMs: 10 });
  t.after(() => c.close());
  assert.equal((await c.append(input(newRun(), "StepCompleted"))).spooled, false);
  assert.equal(s.requests(), 4);

  for (const [status, code] of [
    [400, "SCHEMA_VALIDATION_FAILED"],
    [401, "UNAUTHENTICATED"],
    [403, "FORBIDDEN"],
    [404, "NOT_FOUND"],
    [413, "PAYLOAD_TOO_LARGE"],
    [500, "INTERNAL"],
  ] as const) {
    const once = await scripted(t, (_n, _req, res) => fail(res, status, code));
    const c2 = new RunstreamClient({ url: once.url, writeLatencyBudgetMs: 2000 });
    t.after(() => c2.close());
    await assert.rejects(c2.append(input(newRun(), "StepStarted")), (e: unknown) => {
      assert.ok(e instanceof RunstreamError, String(e));
      assert.equal(e.status, status);
      assert.equal(e.code, code);
      assert.equal(e.message, `scripted ${status}`);
      return true;
    });
    assert.equal(once.requests(), 1, `${status} was retried`);
  }
});

test("budget: past it StepStarted fails open to the spool, StepCompleted and StepFailed reject, all within the budget", async (t) => {
  const s = await scripted(t, (_n, _req, res) => fail(res, 503, "UNAVAILABLE", { "retry-after": "0" }));
  const dir = await tempDir(t);
  const c = new RunstreamClient({ url: s.url, writeLatencyBudgetMs: 500, spoolDir: dir, backoffBaseMs: 10 });
  t.after(() => c.close());
  const run = newRun();
  // The bounds are wide of the 500 ms budget (a busy machine starves the
  // event loop; spooling waits for an fsync) and narrow of the default
  // budget of 3000 ms, which a client ignoring the option would use.
  // The budget's own promise is checked tighter: no request goes out
  // after it.
  let t0 = Date.now();
  const r = await c.append(input(run, "StepStarted", "a"));
  assert.ok(r.spooled, "StepStarted was spooled");
  assert.ok(s.requests() >= 2, "it retried before failing open");
  const lastSent = s.times[s.times.length - 1] - t0;
  assert.ok(lastSent < 1500, `a request went out ${lastSent} ms after the append began`);
  assert.ok(Date.now() - t0 < 2800, `took ${Date.now() - t0} ms`);
  for (const type of ["StepCompleted", "StepFailed", "RunStarted"]) {
    t0 = Date.now();
    await assert.rejects(c.append(input(run, type, "a")), (e: unknown) => {
      assert.ok(e instanceof BudgetExceededError, String(e));
      assert.equal(e.eventType, type);
      assert.equal(e.budgetMs, 500);
      return true;
    });
    assert.ok(Date.now() - t0 < 2800, `${type} took ${Date.now() - t0} ms`);
  }
  assert.equal(await c.spooled(), 1);

  // Without a spool even a fail-open type rejects.
  const noSpool = new RunstreamClient({ url: s.url, writeLatencyBudgetMs: 200 });
  t.after(() => noSpool.close());
  await assert.rejects(noSpool.append(input(newRun(), "StepStarted")), BudgetExceededError);
});

test("budget: a Retry-After beyond the budget fails at once; a request that hangs is cut at the budget", async (t) => {
  const later = await scripted(t, (_n, _req, res) => fail(res, 503, "UNAVAILABLE", { "retry-after": "30" }));
  const c = new RunstreamClient({ url: later.url, writeLatencyBudgetMs: 2000 });
  t.after(() => c.close());
  let t0 = Date.now();
  await assert.rejects(c.append(input(newRun(), "StepCompleted")), (e: unknown) => {
    assert.ok(e instanceof BudgetExceededError);
    assert.ok(e.cause instanceof RunstreamError && e.cause.retryAfterSeconds === 30);
    return true;
  });
  assert.ok(Date.now() - t0 < 1500, `took ${Date.now() - t0} ms`);
  assert.equal(later.requests(), 1);

  const hang = await scripted(t, () => {});
  const h = new RunstreamClient({ url: hang.url, writeLatencyBudgetMs: 400 });
  t.after(() => h.close());
  t0 = Date.now();
  await assert.rejects(h.append(input(newRun(), "StepFailed")), BudgetExceededError);
  const took = Date.now() - t0;
  assert.ok(took >= 380 && took < 2000, `took ${took} ms`);
});

test("per-run order: a run's spooled events go before its next append; a never-fail-open event never overtakes them", async (t) => {
  const dir = await tempDir(t);
  let down = true;
  const sw = switchableFetch(() => down);
  const c = new RunstreamClient({ url: api.url, token: api.token, fetch: sw.fetch, spoolDir: dir, writeLatencyBudgetMs: SLOW_OK });
  t.after(() => c.close());
  const run = newRun();
  const other = newRun();
  assert.ok((await c.append(input(run, "StepStarted", "a"))).spooled);
  await assert.rejects(c.append(input(run, "StepCompleted", "a")), BudgetExceededError);
  assert.ok((await c.append(input(run, "StepStarted", "b"))).spooled);
  assert.ok((await c.append(input(other, "StepStarted", "x"))).spooled);
  assert.equal(await c.spooled(), 3);

  // The API is back, but while run's spool still holds events the
  // never-fail-open append must deliver them first.
  down = false;
  const done = await c.append(input(run, "StepCompleted", "b"));
  assert.equal(done.spooled, false);
  assert.deepEqual(
    (await events(run)).map((e) => `${e.runSeq}:${e.eventType}:${e.stepId}`),
    ["1:StepStarted:a", "2:StepStarted:b", "3:StepCompleted:b"],
  );
  assert.equal(await c.spooled(), 1, "the other run's event waits for the drainer");
  const d = await c.drain();
  assert.deepEqual(d, { delivered: 1, rejected: 0, remaining: 0 });
  assert.deepEqual((await events(other)).map((e) => e.stepId), ["x"]);
});

test("appendBatch past the budget: fail-open items are spooled in order, the others get BudgetExceededError", async (t) => {
  const dir = await tempDir(t);
  const c = new RunstreamClient({ url: unreachable, spoolDir: dir, writeLatencyBudgetMs: 100 });
  t.after(() => c.close());
  const run = newRun();
  const out = await c.appendBatch([input(run, "StepStarted", "a"), input(run, "StepCompleted", "a"), input(run, "StepStarted", "b")]);
  assert.equal(out[0].spooled, true);
  assert.ok("error" in out[1] && out[1].error instanceof BudgetExceededError);
  assert.equal(out[2].spooled, true);
  assert.equal(await c.spooled(), 2);
});

test("the drainer started by start() delivers spooled events run by run once the API is back", async (t) => {
  const dir = await tempDir(t);
  let down = true;
  const sw = switchableFetch(() => down);
  const c = new RunstreamClient({
    url: api.url,
    token: api.token,
    fetch: sw.fetch,
    spoolDir: dir,
    writeLatencyBudgetMs: SLOW_OK,
    drainIntervalMs: 50,
  });
  t.after(() => c.close());
  const runs = [newRun(), newRun(), newRun()];
  await c.start();
  for (let i = 0; i < 12; i++) assert.ok((await c.append(input(runs[i % 3], "StepStarted", `s${i}`))).spooled);
  down = false;
  const deadline = Date.now() + 15000;
  while ((await c.spooled()) > 0) {
    assert.ok(Date.now() < deadline, "the drainer did not empty the spool within 15s");
    await new Promise((r) => setTimeout(r, 20));
  }
  for (let r = 0; r < 3; r++) {
    assert.deepEqual(
      (await events(runs[r])).map((e) => e.stepId),
      [0, 1, 2, 3].map((k) => `s${k * 3 + r}`),
    );
  }
  await c.close();
  await assert.rejects(c.append(input(runs[0], "StepStarted")), { name: "ClientClosedError" });
});

test("concurrent appends of one run are stored in call order, delivered or spooled", async (t) => {
  const dir = await tempDir(t);
  let down = false;
  const sw = switchableFetch(() => down);
  const c = new RunstreamClient({ url: api.url, writeLatencyBudgetMs: SLOW_OK, token: api.token, fetch: sw.fetch, spoolDir: dir });
  t.after(() => c.close());
  const run = newRun();
  // 30 appends in flight at once: the first 10 delivered, the next 10
  // spooled (one shared write and fsync), the last 10 delivered after them.
  const first = Array.from({ length: 10 }, (_, i) => c.append(input(run, "StepStarted", `s${i}`)));
  await Promise.all(first);
  down = true;
  const second = Array.from({ length: 10 }, (_, i) => c.append(input(run, "StepStarted", `s${10 + i}`)));
  const spooled = await Promise.all(second);
  assert.ok(spooled.every((r) => r.spooled));
  down = false;
  const third = Array.from({ length: 10 }, (_, i) => c.append(input(run, "StepStarted", `s${20 + i}`)));
  const delivered = await Promise.all(third);
  assert.ok(delivered.every((r) => !r.spooled));
  assert.deepEqual(
    (await events(run)).map((e) => `${e.runSeq}:${e.stepId}`),
    Array.from({ length: 30 }, (_, i) => `${i + 1}:s${i}`),
  );
  assert.equal(await c.spooled(), 0);
});

test("appendBatch: once a run's event is not delivered, none of its later events in the batch overtakes it", async (t) => {
  const s = await scripted(t, (n, req, res) => {
    if (n === 0) return fail(res, 503, "UNAVAILABLE", { "retry-after": "60" }); // beyond the budget: give up at once
    const count = Number(req.headers["x-count"] ?? 0); // set by the fetch below
    res.writeHead(200, { "content-type": "application/json" }).end(
      JSON.stringify({
        results: Array.from({ length: count }, (_, k) => ({
          eventId: randomUUID(),
          runSeq: k + 1,
          persistedAt: "2026-02-16T10:30:00.123456Z",
          idempotent: false,
          persisted: true,
        })),
      }),
    );
  });
  // Tell the scripted server how many events each request holds.
  const counting: typeof fetch = (i, init) => {
    const n = (String(init?.body).match(/"eventType"/g) ?? []).length;
    return fetch(i, { ...init, headers: { ...(init?.headers as Record<string, string>), "x-count": String(n) } });
  };
  const dir = await tempDir(t);
  const c = new RunstreamClient({ url: s.url, spoolDir: dir, fetch: counting });
  t.after(() => c.close());
  const a = newRun();
  const b = newRun();
  const evs = [
    ...Array.from({ length: 550 }, (_, i) => input(a, "StepStarted", `s${i}`)),
    ...Array.from({ length: 50 }, (_, i) => input(b, "StepStarted", `s${i}`)),
  ];
  const out = await c.appendBatch(evs);
  assert.equal(s.requests(), 2, "the second request holds only run b's events");
  assert.ok(out.slice(0, 550).every((o) => o.spooled === true), "run a: all spooled, in order");
  assert.ok(out.slice(550).every((o) => o.spooled === false), "run b: delivered");
  assert.equal(await c.spooled(), 550);
});
