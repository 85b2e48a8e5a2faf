// The known event types: the client's list is the server's (store/types.go
// and the JSON Schemas of store/validate/schemas), each type's payload
// fields are the ones its schema types, and an event type outside the list
// is refused locally, with the nearest known type suggested, unless the
// client was told to send it (allowEventTypes).
import { test } from "node:test";
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

import {
  KNOWN_EVENT_TYPES,
  RUN_EVENT_TYPES,
  RunstreamClient,
  STEP_EVENT_TYPES,
  UnknownEventTypeError,
  suggestEventType,
  type KnownEventType,
  type PayloadOf,
} from "../src/index.js";
import { input, newRun, repoDir, switchableFetch } from "./env.js";

type NamedKeys<T> = keyof { [K in keyof T as string extends K ? never : number extends K ? never : K]: T[K] };

// The named payload fields of each type, as a value the test can compare
// with the schemas. `satisfies` checks every name is a field of the type;
// Complete below checks none is missing.
const PAYLOAD_FIELDS = {
  RunQueued: ["sourceOccurredAt"],
  RunApproved: ["sourceOccurredAt"],
  RunStarted: ["sourceOccurredAt", "engineRunRef", "engineType", "startedAt", "planRef", "context"],
  RunPaused: ["sourceOccurredAt", "signalId", "reason", "substatus"],
  RunResumed: ["sourceOccurredAt", "signalId", "reason", "substatus"],
  RunCompleted: ["sourceOccurredAt", "artifacts"],
  RunFailed: ["sourceOccurredAt", "errorCode", "errorMessage", "retryable", "stack", "failureCategory", "failureSource"],
  RunCancelled: ["sourceOccurredAt"],
  StepStarted: ["sourceOccurredAt"],
  StepCompleted: ["sourceOccurredAt", "result", "durationMs", "artifacts"],
  StepFailed: ["sourceOccurredAt", "errorCode", "errorMessage", "retryable", "stack", "failureCategory", "failureSource", "artifacts", "durationMs"],
  StepSkipped: ["sourceOccurredAt", "reason", "reasonCode"],
} as const satisfies { [T in KnownEventType]: readonly NamedKeys<PayloadOf[T]>[] };
type Complete = { [T in KnownEventType]: Exclude<NamedKeys<PayloadOf[T]>, (typeof PAYLOAD_FIELDS)[T][number]> };
const complete: { [T in KnownEventType]: never } = null as unknown as Complete;
void complete;

// Fields the TypeScript types name that no schema does, and why.
const BEYOND_SCHEMA: Partial<Record<KnownEventType, string[]>> = {
  // reduce/step.go stepDuration reads it for a failed attempt too.
  StepFailed: ["durationMs"],
};

const schemasDir = join(repoDir, "store", "validate", "schemas");

function readSchema(name: string): any {
  return JSON.parse(readFileSync(join(schemasDir, name), "utf8"));
}

/** The server's lists: store/types.go's RunEventTypes and StepEventTypes, by their constants. */
function serverLists(): { run: string[]; step: string[] } {
  const src = readFileSync(join(repoDir, "store", "types.go"), "utf8");
  const consts = new Map<string, string>();
  for (const m of src.matchAll(/^\s*(Event[A-Za-z]+)\s*=\s*"([A-Za-z]+)"/gm)) consts.set(m[1], m[2]);
  const list = (name: string) => {
    const m = new RegExp(`var ${name} = \\[\\]string\\{([^}]*)\\}`).exec(src);
    assert.ok(m, `store/types.go has no ${name} list`);
    return m[1]
      .split(",")
      .map((s) => s.trim())
      .filter(Boolean)
      .map((c) => {
        const v = consts.get(c);
        assert.ok(v, `store/types.go: ${c} is not a constant of the file`);
        return v;
      });
  };
  return { run: list("RunEventTypes"), step: list("StepEventTypes") };
}

test("the known event types are the server's: store/types.go's lists and one schema per type, split run/step as the schemas split them", () => {
  const server = serverLists();
  assert.deepEqual([...RUN_EVENT_TYPES].sort(), [...server.run].sort(), "run-level types");
  assert.deepEqual([...STEP_EVENT_TYPES].sort(), [...server.step].sort(), "step-level types");
  assert.deepEqual([...KNOWN_EVENT_TYPES].sort(), [...server.run, ...server.step].sort());

  const files = readdirSync(schemasDir)
    .filter((f) => f.endsWith(".schema.json") && f !== "envelope.schema.json")
    .map((f) => f.replace(".schema.json", ""));
  assert.deepEqual(files.sort(), [...KNOWN_EVENT_TYPES].sort(), "store/validate/schemas holds one schema per known type");
  for (const t of files) {
    const refs = JSON.stringify(readSchema(`${t}.schema.json`).allOf);
    const step = refs.includes("#/$defs/stepEvent");
    assert.equal(step, (STEP_EVENT_TYPES as readonly string[]).includes(t), `${t}: the schema says ${step ? "step" : "run"}-level`);
  }
});

test("each known type's payload fields are the ones its JSON Schema types (RunEvents v1 section 4.3)", () => {
  const envelope = readSchema("envelope.schema.json");
  const base = Object.keys(envelope.$defs.payload.properties);
  for (const t of KNOWN_EVENT_TYPES) {
    const payload = readSchema(`${t}.schema.json`).properties.payload ?? {};
    const fields = new Set<string>([...base, ...Object.keys(payload.properties ?? {})]);
    if (payload.$ref) {
      const def = /#\/\$defs\/(\w+)$/.exec(payload.$ref)![1];
      for (const f of Object.keys(envelope.$defs[def].properties)) fields.add(f);
    }
    for (const f of BEYOND_SCHEMA[t] ?? []) fields.add(f);
    assert.deepEqual([...PAYLOAD_FIELDS[t]].sort(), [...fields].sort(), `${t}'s payload fields`);
  }
});

test("an unknown event type is refused locally with the nearest known type; nothing is sent", async (t) => {
  const f = switchableFetch(() => false);
  const c = new RunstreamClient({ url: "http://127.0.0.1:1", fetch: f.fetch, writeLatencyBudgetMs: 1000 });
  t.after(() => c.close());
  const run = newRun();
  for (const [typ, near] of [
    ["StepStartd", "StepStarted"],
    ["Stepstarted", "StepStarted"],
    ["onStepStarted", "StepStarted"],
    ["StepComplete", "StepCompleted"],
    ["RunCanceled", "RunCancelled"],
    ["runstarted", "RunStarted"],
    ["StpeFailed", "StepFailed"],
    ["STEPSTARTED", "StepStarted"],
    ["stepStarted", "StepStarted"],
  ] as const) {
    await assert.rejects(c.append(input(run, typ)), (e: unknown) => {
      assert.ok(e instanceof UnknownEventTypeError, String(e));
      assert.equal(e.eventType, typ);
      assert.equal(e.suggestion, near);
      assert.equal(e.field, "eventType");
      assert.match(e.message, new RegExp(`did you mean ${near}\\?`));
      assert.match(e.message, /allowEventTypes/);
      return true;
    });
  }
  // Nothing near: the message lists the contract's types instead.
  await assert.rejects(c.append(input(run, "WorkflowBegan")), (e: unknown) => {
    assert.ok(e instanceof UnknownEventTypeError);
    assert.equal(e.suggestion, undefined);
    assert.match(e.message, /the contract's types are RunQueued, .*StepSkipped/);
    return true;
  });
  const [item] = await c.appendBatch([input(run, "StepStartd")]);
  assert.ok("error" in item && item.error instanceof UnknownEventTypeError && item.error.field === "events[0].eventType");
  assert.equal(f.calls(), 0, "nothing was sent");
});

test("allowEventTypes lets a type of the producer's own through (the API stores it); others stay refused", async (t) => {
  let sent = 0;
  const c = new RunstreamClient({
    url: "http://127.0.0.1:1",
    writeLatencyBudgetMs: 1000,
    allowEventTypes: ["StepHeartbeat"],
    fetch: async () => {
      sent++;
      return new Response(JSON.stringify({ eventId: "e", runSeq: 1, persistedAt: "2026-01-01T00:00:00.000000Z", idempotent: false, persisted: true }), { status: 201 });
    },
  });
  t.after(() => c.close());
  const r = await c.append(input(newRun(), "StepHeartbeat", "a"));
  assert.equal(r.spooled, false);
  assert.equal(sent, 1);
  await assert.rejects(c.append(input(newRun(), "StepHeartbeet", "a")), UnknownEventTypeError);
  assert.throws(() => new RunstreamClient({ url: "http://x", allowEventTypes: ["step_heartbeat"] }), /allowEventTypes holds "step_heartbeat"/);
});

test("suggestEventType: near misspellings only", () => {
  assert.equal(suggestEventType("StepStarted"), "StepStarted");
  assert.equal(suggestEventType("STEPSTARTED"), "StepStarted");
  assert.equal(suggestEventType("StepBegan"), undefined);
  assert.equal(suggestEventType("Heartbeat"), undefined);
  assert.equal(suggestEventType(""), undefined);
});
