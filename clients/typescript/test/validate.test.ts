// Local validation gives the API's answer: each bad event is sent raw to
// the real API and checked locally; code, field and message must be equal,
// and an event the API accepts must pass locally.
import { test } from "node:test";
import assert from "node:assert/strict";

import { RunstreamClient, RunstreamError, validateEvent } from "../src/index.js";
import { api, SLOW_OK, full, newRun, postRaw, switchableFetch } from "./env.js";

type Ev = Record<string, unknown>;
const cases: [string, (run: string) => Ev][] = [];
const add = (name: string, f: (e: Ev) => void, type = "StepStarted") =>
  cases.push([
    name,
    (run) => {
      const e = full(run, type);
      f(e);
      return e;
    },
  ]);
const rekey = (e: Ev) => {
  const { idempotencyKey: _, ...rest } = e;
  return rest;
};

add("valid step event", () => {});
add("valid run event", () => {}, "RunStarted");
add("unknown type with a stepId (forward compatibility)", (e) => {
  e.eventType = "StepRetried";
  // the key follows the type
  Object.assign(e, { idempotencyKey: undefined });
});
add("missing eventId, emittedAt and runId", (e) => {
  delete e.eventId;
  delete e.emittedAt;
  delete e.runId;
});
add("missing runId, misspelt", (e) => {
  e.RunId = e.runId;
  delete e.runId;
});
add("missing stepId on a step event", (e) => delete e.stepId);
add("missing stepId with stepID beside", (e) => {
  e.stepID = e.stepId;
  delete e.stepId;
});
add("stepId on a run event", (e) => (e.stepId = "s"), "RunCompleted");
add("empty stepId on a run event", (e) => (e.stepId = ""), "RunStarted");
add("eventId version 1", (e) => (e.eventId = "3f1c2a4e-8b7d-1c6a-9e2f-1a2b3c4d5e6f"));
add("eventId bad variant", (e) => (e.eventId = "3f1c2a4e-8b7d-4c6a-1e2f-1a2b3c4d5e6f"));
add("eventId garbage", (e) => (e.eventId = "not-a-uuid"));
add("eventId number", (e) => (e.eventId = 42));
add("eventType with on prefix", (e) => (e.eventType = "onRunStarted"));
add("eventType snake case", (e) => (e.eventType = "step_completed"));
add("eventType empty", (e) => (e.eventType = ""));
add("eventType not a string", (e) => (e.eventType = 7));
add("eventType with a symbol", (e) => (e.eventType = "Run$Started"));
add("emittedAt February 30", (e) => (e.emittedAt = "2026-02-30T10:00:00Z"));
add("emittedAt with a space", (e) => (e.emittedAt = "2026-02-16 10:30:00Z"));
add("emittedAt lowercase t", (e) => (e.emittedAt = "2026-02-16t10:30:00Z"));
add("emittedAt second 60", (e) => (e.emittedAt = "2026-02-16T10:30:60Z"));
add("emittedAt offset +24:00", (e) => (e.emittedAt = "2026-02-16T10:30:00+24:00"));
add("emittedAt long fraction and offset (valid)", (e) => (e.emittedAt = "2024-02-29T23:59:59.1234567890-05:30"));
add("emittedAt number", (e) => (e.emittedAt = 1700000000));
add("runId with a pipe", (e) => (e.runId = `${e.runId}|x`));
add("runId with BEL", (e) => (e.runId = `${e.runId}\u0007`));
add("projectId with a C1 control", (e) => (e.projectId = "pro\u0085j"));
add("tenantId empty", (e) => (e.tenantId = ""));
add("planId not a string", (e) => (e.planId = ["a"]));
add("planVersion null", (e) => (e.planVersion = null));
add("environmentId of 300 ASCII characters", (e) => (e.environmentId = "e".repeat(300)));
add("environmentId of 200 two-byte characters", (e) => (e.environmentId = "é".repeat(200)));
add("projectId with a pipe, long and multibyte", (e) => (e.projectId = "ü".repeat(60) + "|" + "x".repeat(10)));
add("runId with NUL", (e) => (e.runId = `${e.runId}\u0000`));
add("stepId with a lone surrogate", (e) => (e.stepId = "step\ud800"));
add("payload string with a lone low surrogate", (e) => (e.payload = { note: "a\udc00b", other: 1 }));
add("payload nested NUL", (e) => (e.payload = { a: { b: ["ok", "x\u0000"] } }));
add("payload member name with NUL", (e) => (e.payload = { "k\u0000": 1 }));
add("NUL in an unknown member is ignored", (e) => (e.extra = "x\u0000"));
add("engineAttemptId 0", (e) => (e.engineAttemptId = 0));
add("logicalAttemptId 1.5", (e) => (e.logicalAttemptId = 1.5));
add("logicalAttemptId as a string", (e) => (e.logicalAttemptId = "1"));
add("engineAttemptId 2^31", (e) => (e.engineAttemptId = 2147483648));
add("engineAttemptId null", (e) => (e.engineAttemptId = null));
add("engineAttemptId NaN (sent as null)", (e) => (e.engineAttemptId = NaN));
add("idempotencyKey of another event", (e) => (e.idempotencyKey = "0".repeat(64)));
add("idempotencyKey uppercase", (e) => (e.idempotencyKey = (e.idempotencyKey as string).toUpperCase()));
add("idempotencyKey short", (e) => (e.idempotencyKey = "abc"));
add("idempotencyKey not a string", (e) => (e.idempotencyKey = 12));
add("idempotencyKey missing", (e) => delete e.idempotencyKey);
add("payload an array", (e) => (e.payload = [1]));
add("payload null", (e) => (e.payload = null));
add("payload a string", (e) => (e.payload = "x"));
add("payload sourceOccurredAt bad", (e) => (e.payload = { sourceOccurredAt: "yesterday" }));
add("payload sourceOccurredAt number", (e) => (e.payload = { sourceOccurredAt: 5 }));
add("StepCompleted durationMs negative", (e) => (e.payload = { durationMs: -1, result: { any: "thing" } }), "StepCompleted");
add("StepCompleted durationMs a string", (e) => (e.payload = { durationMs: "5" }), "StepCompleted");
add("StepCompleted artifact without uri and kind", (e) => (e.payload = { artifacts: [{ uri: "s3://a", kind: "x" }, {}] }), "StepCompleted");
add("StepCompleted artifact empty uri", (e) => (e.payload = { artifacts: [{ uri: "", kind: "x" }] }), "StepCompleted");
add("StepCompleted artifact sizeBytes 1.5", (e) => (e.payload = { artifacts: [{ uri: "u", kind: "k", sizeBytes: 1.5 }] }), "StepCompleted");
add("StepCompleted artifacts not an array", (e) => (e.payload = { artifacts: { uri: "u" } }), "StepCompleted");
add("StepCompleted artifact a string", (e) => (e.payload = { artifacts: ["u"] }), "StepCompleted");
add("StepFailed failureCategory unknown", (e) => (e.payload = { failureCategory: "BAD", retryable: "yes" }), "StepFailed");
add("StepFailed retryable a string", (e) => (e.payload = { retryable: "yes", errorCode: 5 }), "StepFailed");
add("RunFailed valid failure", (e) => (e.payload = { failureCategory: "USER", errorMessage: "boom" }), "RunFailed");
add("RunStarted startedAt bad", (e) => (e.payload = { startedAt: "2026-13-01T00:00:00Z", planRef: 3 }), "RunStarted");
add("RunPaused reason a number", (e) => (e.payload = { reason: 1 }), "RunPaused");
add("StepSkipped reasonCode a bool", (e) => (e.payload = { reasonCode: true }), "StepSkipped");
add("several problems: the earliest field wins", (e) => {
  e.payload = [];
  e.runId = "a|b";
  e.eventId = "x";
});

for (const [name, make] of cases) {
  test(`validation equals the API's answer: ${name}`, async () => {
    const run = newRun();
    let ev = make(run);
    if (ev.idempotencyKey === undefined && "idempotencyKey" in ev) {
      // re-key for the changed type
      ev = rekey(ev);
      ev.idempotencyKey = (await import("../src/index.js")).idempotencyKey(ev as any);
    }
    const answer = await postRaw("/v1/events", JSON.stringify(ev));
    const local = validateEvent(ev);
    const shouldPass = /valid|forward compatibility|ignored/.test(name);
    assert.equal(answer.status === 201, shouldPass, `the API answered ${answer.status} ${JSON.stringify(answer.body)}`);
    if (answer.status === 201 || answer.status === 200) {
      assert.equal(local, null, `the API accepted it; locally: ${local?.field}: ${local?.message}`);
      return;
    }
    assert.equal(answer.status, 400, JSON.stringify(answer.body));
    assert.ok(local instanceof RunstreamError, `the API refused it (${JSON.stringify(answer.body)}); locally accepted`);
    assert.deepEqual(local.toJSON(), answer.body.error);
    if (process.env.RUNSTREAM_TS_VERBOSE) console.log(name, "=>", answer.body.error);
    assert.equal(local.status, 400);
    assert.equal(local.local, true);
  });
}

test("validation equals the API's answer inside a batch (events[i].field)", async () => {
  const a = full(newRun(), "StepStarted");
  const b = full(newRun(), "StepStarted");
  b.runId = "x|y";
  const c = full(newRun(), "RunStarted");
  c.stepId = "s";
  const answer = await postRaw("/v1/events:batch", JSON.stringify({ events: [a, b, c] }));
  assert.equal(answer.status, 200);
  assert.equal(answer.body.results[0].runSeq, 1);
  assert.deepEqual(validateEvent(b, "events[1].")!.toJSON(), answer.body.results[1].error);
  assert.deepEqual(validateEvent(c, "events[2].")!.toJSON(), answer.body.results[2].error);
});

test("a bad event is refused locally: never sent, never spooled", async (t) => {
  const down = switchableFetch(() => false);
  const c = new RunstreamClient({ url: api.url, writeLatencyBudgetMs: SLOW_OK, token: api.token, fetch: down.fetch });
  t.after(() => c.close());
  const ev = full(newRun(), "StepStarted");
  ev.runId = "a|b";
  await assert.rejects(c.append(ev as any), (e: unknown) => {
    assert.ok(e instanceof RunstreamError);
    assert.equal(e.code, "SCHEMA_VALIDATION_FAILED");
    assert.equal(e.field, "runId");
    assert.equal(e.local, true);
    return true;
  });
  const [item] = await c.appendBatch([ev as any]);
  assert.ok("error" in item && item.error instanceof RunstreamError && item.error.field === "events[0].runId");
  assert.equal(down.calls(), 0, "nothing was sent");
});

test("validation equals the API's answer for batch items that are not objects", async () => {
  const items = [5, "x", null, [1], true];
  const answer = await postRaw("/v1/events:batch", JSON.stringify({ events: items }));
  assert.equal(answer.status, 200);
  items.forEach((item, i) => {
    assert.deepEqual(validateEvent(item, `events[${i}].`)!.toJSON(), answer.body.results[i].error, JSON.stringify(item));
  });
});
