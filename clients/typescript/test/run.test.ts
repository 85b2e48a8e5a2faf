// The run handle against the real API: a whole lifecycle written through
// client.run() (a retried step, a step whose start failed open into the
// spool and was drained, a skipped step, a pause), stored with the
// correlation fields, keys and attempt counters an engine would otherwise
// compute by hand, and projected into the snapshot the engine expects.
import { test } from "node:test";
import assert from "node:assert/strict";

import { RunstreamClient, idempotencyKey } from "../src/index.js";
import { api, SLOW_OK, events, newRun, switchableFetch, tempDir } from "./env.js";

const identity = {
  tenantId: "",
  projectId: "proj",
  environmentId: "test",
  planId: "plan_handle",
  planVersion: "3",
};

async function snapshot(runId: string): Promise<any> {
  const res = await fetch(`${api.url}/v1/runs/${runId}/snapshot?consistent=true`, { headers: { authorization: `Bearer ${api.token}` } });
  assert.equal(res.status, 200, await res.clone().text());
  return res.json();
}

test("run handle: a whole lifecycle with a retried step and a fail-open start drained from the spool", async (t) => {
  const dir = await tempDir(t);
  let down = false;
  const sw = switchableFetch(() => down);
  const c = new RunstreamClient({ url: api.url, token: api.token, fetch: sw.fetch, spoolDir: dir, writeLatencyBudgetMs: SLOW_OK });
  t.after(() => c.close());

  const made = Date.now();
  const run = c.run({ ...identity, tenantId: api.tenant, engineRunRef: "wf-lifecycle", engineAttemptId: 2 });
  assert.match(run.runId, /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/, "a UUID v7 was made for the run");
  const at = parseInt(run.runId.slice(0, 8) + run.runId.slice(9, 13), 16);
  assert.ok(at >= made && at <= Date.now(), `the run id carries ${at}, want a time from ${made} to now`);

  const started = await run.started({ engineType: "temporal" });
  assert.ok(!started.spooled && started.runSeq === 1 && started.persisted);

  // Step a fails once (retryable) and succeeds on its retry: attempts 1 and 2.
  const a = run.step("extract");
  await a.started();
  await a.failed({ errorCode: "TIMEOUT", errorMessage: "the source took too long", failureCategory: "TIMEOUT" }, { retryable: true });
  assert.equal(a.logicalAttemptId, 1);
  await a.started();
  assert.equal(a.logicalAttemptId, 2, "a start after a failure is the next logical attempt");
  await a.completed({ result: { rows: 3 }, durationMs: 12 });

  // Step b starts while the API is away: StepStarted fails open into the spool...
  down = true;
  const b = run.step("load");
  const spooled = await b.started();
  assert.equal(spooled.spooled, true);
  assert.equal(await c.spooled(), 1);
  // ...and is delivered when it comes back.
  down = false;
  assert.deepEqual(await c.drain(), { delivered: 1, rejected: 0, remaining: 0 });
  await b.completed({ durationMs: 40 });

  await run.step("notify").skipped({ reason: "no recipients", reasonCode: "CONDITION_FALSE" });
  await run.paused({ signalId: "sig-1", reason: "maintenance" });
  await run.resumed({ signalId: "sig-2" });
  const done = await run.completed();
  assert.ok(!done.spooled && done.runSeq === 11, JSON.stringify(done));

  const stored = await events(run.runId);
  assert.deepEqual(
    stored.map((e) => `${e.runSeq} ${e.eventType} ${e.stepId ?? "-"} ${e.logicalAttemptId}/${e.engineAttemptId}`),
    [
      "1 RunStarted - 1/2",
      "2 StepStarted extract 1/2",
      "3 StepFailed extract 1/2",
      "4 StepStarted extract 2/2",
      "5 StepCompleted extract 2/2",
      "6 StepStarted load 1/2",
      "7 StepCompleted load 1/2",
      "8 StepSkipped notify 1/2",
      "9 RunPaused - 1/2",
      "10 RunResumed - 1/2",
      "11 RunCompleted - 1/2",
    ],
  );
  for (const e of stored) {
    assert.deepEqual(
      [e.tenantId, e.projectId, e.environmentId, e.planId, e.planVersion],
      [api.tenant, identity.projectId, identity.environmentId, identity.planId, identity.planVersion],
    );
    assert.equal(e.idempotencyKey, idempotencyKey(e), `${e.eventType}: the v2 key`);
    assert.ok(!Number.isNaN(Date.parse(e.emittedAt)), "emittedAt filled in");
  }
  assert.equal(new Set(stored.map((e) => e.eventId)).size, stored.length, "one eventId per event");
  assert.deepEqual(stored[0].payload, { engineRunRef: "wf-lifecycle", engineType: "temporal" });
  assert.deepEqual(stored[2].payload, {
    errorCode: "TIMEOUT",
    errorMessage: "the source took too long",
    failureCategory: "TIMEOUT",
    retryable: true,
  });
  assert.deepEqual(stored[4].payload, { result: { rows: 3 }, durationMs: 12 });

  // What the engine sees: the retry is attempt 2 with attempt 1 kept, the
  // drained start counted, the skip and the engine's run reference shown.
  const snap = await snapshot(run.runId);
  assert.equal(snap.status, "COMPLETED");
  assert.equal(snap.engineRunRef, "wf-lifecycle");
  assert.equal(snap.lastEventSeq, 11);
  assert.equal(snap.failedSteps, 1);
  const steps = new Map<string, any>(snap.steps.map((s: any) => [s.stepId, s]));
  assert.equal(steps.get("extract").status, "SUCCESS");
  assert.equal(steps.get("extract").logicalAttemptId, 2);
  assert.equal(steps.get("extract").durationMs, 12);
  assert.deepEqual(
    steps.get("extract").attempts.map((x: any) => [x.logicalAttemptId, x.status, x.error?.code]),
    [[1, "FAILED", "TIMEOUT"]],
  );
  assert.equal(steps.get("load").status, "SUCCESS");
  assert.equal(steps.get("notify").status, "SKIPPED");
  assert.equal(steps.get("notify").skip.reasonCode, "CONDITION_FALSE");

  // Another process writing to the same run (a retried activity) names the
  // run and the attempt it is on; what it repeats is a duplicate.
  const again = c.run({ ...identity, tenantId: api.tenant, runId: run.runId, engineAttemptId: 3 });
  const dup = await again.step("extract", { logicalAttemptId: 2 }).completed({ result: { rows: 3 }, durationMs: 12 });
  assert.ok(!dup.spooled && dup.idempotent && dup.runSeq === 5, JSON.stringify(dup));
  const dupRun = await again.completed();
  assert.ok(!dupRun.spooled && dupRun.idempotent && dupRun.runSeq === 11);
  assert.equal((await events(run.runId)).length, 11, "nothing stored twice");
});

test("run handle: a run that fails, a run that is cancelled, and a step that fails for good", async (t) => {
  const c = new RunstreamClient({ url: api.url, token: api.token, writeLatencyBudgetMs: SLOW_OK, failOpen: [] });
  t.after(() => c.close());
  const failing = c.run({ ...identity, tenantId: api.tenant });
  await failing.started();
  const s = failing.step("charge");
  await s.started();
  await s.failed({ errorCode: "CARD_DECLINED", failureCategory: "USER" }, { retryable: false });
  await failing.failed({ errorCode: "STEP_FAILED", errorMessage: "charge failed", failureSource: "engine" });
  const snap = await snapshot(failing.runId);
  assert.equal(snap.status, "FAILED");
  assert.equal(snap.error.code, "STEP_FAILED");
  assert.equal(snap.steps[0].error.code, "CARD_DECLINED");
  assert.equal(snap.steps[0].error.retryable, false);

  const cancelled = c.run({ ...identity, tenantId: api.tenant, runId: newRun() });
  await cancelled.started();
  await cancelled.cancelled({ reason: "operator" });
  assert.equal((await snapshot(cancelled.runId)).status, "CANCELLED");
});
