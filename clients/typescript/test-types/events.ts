// Type tests, run by `npm run test:types` (tsc --noEmit -p test-types):
// what must compile compiles, and each line after a @ts-expect-error must
// not (tsc fails on a @ts-expect-error with no error under it). Nothing
// here runs; the client is never called.
//
// The first part is the examples of mistakes that compiled before
// the event types were a discriminated union (issue 35); then the other
// mistakes an engine makes; then the run handle; last, that the ergonomic
// types agree with the wire types generated from the OpenAPI document.

import type { components } from "../src/api.js";
import {
  RunstreamClient,
  type EventInput,
  type FailurePayload,
  type KnownEventType,
  type PayloadBase,
  type RunEventWrite,
  type SignalPayload,
  type WireRunEventWrite,
} from "../src/index.js";
import { RUN_EVENT_TYPES, STEP_EVENT_TYPES } from "../src/validate.js";

declare const rs: RunstreamClient;
declare const runId: string;

const envelope = {
  runId,
  tenantId: "tenant_acme",
  projectId: "proj",
  environmentId: "prod",
  planId: "plan_abc",
  planVersion: "2",
  engineAttemptId: 1,
  logicalAttemptId: 1,
};

// ---- the examples -------------------------------------------------

// @ts-expect-error an empty event
void rs.append({});
// @ts-expect-error eventType misspelt, runId misspelt and a number
void rs.append({ evenType: "RunStarted", runID: 5 });
// @ts-expect-error an attempt as a string
void rs.append({ ...envelope, eventType: "RunStarted", engineAttemptId: "1" });
// @ts-expect-error a misspelt optional member, which the API would drop silently
void rs.append({ ...envelope, eventType: "RunStarted", payloads: { engineRunRef: "wf-1" } });
// @ts-expect-error a misspelt event type with a stepId
void rs.append({ ...envelope, eventType: "StepStartd", stepId: "a" });
// @ts-expect-error a miscased event type
void rs.append({ ...envelope, eventType: "Stepstarted", stepId: "a" });

// ---- what compiles --------------------------------------------------------

void rs.append({ ...envelope, eventType: "RunStarted" });
void rs.append({ ...envelope, eventType: "RunStarted", payload: { engineRunRef: "wf-1", engineType: "temporal" } });
void rs.append({ ...envelope, eventType: "StepStarted", stepId: "a" });
void rs.append({ ...envelope, eventType: "StepCompleted", stepId: "a", payload: { result: { rows: 3 }, durationMs: 12 } });
void rs.append({
  ...envelope,
  eventType: "StepFailed",
  stepId: "a",
  payload: { errorCode: "TIMEOUT", errorMessage: "took too long", retryable: true, failureCategory: "TIMEOUT", failureSource: "activity" },
});
void rs.append({ ...envelope, eventType: "StepSkipped", stepId: "a", payload: { reason: "condition false", reasonCode: "CONDITION_FALSE" } });
void rs.append({ ...envelope, eventType: "RunPaused", payload: { signalId: "sig-1", substatus: "DRAINING" } });
void rs.append({ ...envelope, eventType: "RunCompleted", payload: { artifacts: [{ uri: "s3://b/k", kind: "parquet", sizeBytes: 10 }] } });
void rs.append({ ...envelope, eventType: "RunFailed", payload: { errorCode: "STEP_EXHAUSTED" } });
// fields of the producer's own in a payload: the contract allows them and the API stores them
void rs.append({ ...envelope, eventType: "StepStarted", stepId: "a", payload: { sourceOccurredAt: "2026-02-16T10:30:00Z", worker: "w-7" } });
// everything the client would fill in, given
void rs.append({ ...envelope, eventType: "RunCancelled", eventId: "3f1c2a4e-8b7d-4c6a-9e2f-1a2b3c4d5e6f", emittedAt: "2026-02-16T10:30:00Z", idempotencyKey: "0".repeat(64) });
void rs.appendBatch([
  { ...envelope, eventType: "RunStarted" },
  { ...envelope, eventType: "StepStarted", stepId: "a" },
]);
// an event typed elsewhere, of any known type
declare const some: EventInput;
void rs.append(some);

// ---- other mistakes -------------------------------------------------------

// @ts-expect-error a stepId on a run-level event
void rs.append({ ...envelope, eventType: "RunCompleted", stepId: "a" });
// @ts-expect-error no stepId on a step-level event
void rs.append({ ...envelope, eventType: "StepCompleted" });
// @ts-expect-error no tenantId
void rs.append({ eventType: "RunStarted", runId, projectId: "p", environmentId: "e", planId: "p", planVersion: "1", engineAttemptId: 1, logicalAttemptId: 1 });
// @ts-expect-error no attempts
void rs.append({ eventType: "RunStarted", runId, tenantId: "t", projectId: "p", environmentId: "e", planId: "p", planVersion: "1" });
// @ts-expect-error planVersion a number
void rs.append({ ...envelope, eventType: "RunStarted", planVersion: 2 });
// @ts-expect-error an "on" prefix
void rs.append({ ...envelope, eventType: "onRunStarted" });
// @ts-expect-error a failure category the contract does not have
void rs.append({ ...envelope, eventType: "StepFailed", stepId: "a", payload: { failureCategory: "OOPS" } });
// @ts-expect-error retryable as a string
void rs.append({ ...envelope, eventType: "StepFailed", stepId: "a", payload: { retryable: "yes" } });
// @ts-expect-error an error code as a number
void rs.append({ ...envelope, eventType: "RunFailed", payload: { errorCode: 5 } });
// @ts-expect-error durationMs as a string
void rs.append({ ...envelope, eventType: "StepCompleted", stepId: "a", payload: { durationMs: "12" } });
// @ts-expect-error an artifact without its kind
void rs.append({ ...envelope, eventType: "StepCompleted", stepId: "a", payload: { artifacts: [{ uri: "s3://b/k" }] } });
// @ts-expect-error a payload that is not an object
void rs.append({ ...envelope, eventType: "StepCompleted", stepId: "a", payload: "done" });
// @ts-expect-error a misspelt member inside a batch
void rs.appendBatch([{ ...envelope, eventType: "RunStarted", stepID: "a" }]);
// @ts-expect-error a type of the producer's own, not allowed
void rs.append({ ...envelope, eventType: "StepHeartbeat", stepId: "a" });

// ---- types of the producer's own (allowEventTypes) -----------------------

const custom = new RunstreamClient({ url: "http://127.0.0.1:8080", allowEventTypes: ["StepHeartbeat", "RunAudited"] });
void custom.append({ ...envelope, eventType: "StepHeartbeat", stepId: "a", payload: { progress: 0.5 } });
void custom.append({ ...envelope, eventType: "RunAudited" });
void custom.append({ ...envelope, eventType: "StepStarted", stepId: "a" });
// @ts-expect-error a custom type not listed
void custom.append({ ...envelope, eventType: "StepHeartbeet", stepId: "a" });
// @ts-expect-error the known types stay strict beside custom ones
void custom.append({ ...envelope, eventType: "RunStarted", stepId: "a" });
// @ts-expect-error excess members are still caught on a custom type
void custom.append({ ...envelope, eventType: "RunAudited", payloads: {} });
// types listed as string[] (read from configuration) let any type compile; the runtime check stays
declare const fromConfig: string[];
const open = new RunstreamClient({ url: "http://127.0.0.1:8080", allowEventTypes: fromConfig });
void open.append({ ...envelope, eventType: "AnythingAtAll" });

// ---- the run handle -------------------------------------------------------

const run = rs.run({
  tenantId: "tenant_acme",
  projectId: "proj",
  environmentId: "prod",
  planId: "plan_abc",
  planVersion: "2",
  engineRunRef: "wf-1",
});
const id: string = run.runId;
void id;
void run.started();
void run.started({ engineType: "temporal", context: { region: "eu" } });
const step = run.step("extract", { engineAttemptId: 2 });
void step.started();
void step.completed({ result: { rows: 3 }, durationMs: 12 });
void step.failed({ errorCode: "TIMEOUT", errorMessage: "took too long", failureCategory: "TIMEOUT" }, { retryable: true });
void step.failed();
void step.skipped("condition false");
void step.skipped({ reason: "upstream failed", reasonCode: "DEPENDENCY_FAILED" });
void run.paused({ signalId: "sig-1" });
void run.resumed();
void run.completed();
void run.failed({ errorCode: "STEP_EXHAUSTED", errorMessage: "extract failed 3 times" });
void run.cancelled();
const attempt: number = step.logicalAttemptId;
void attempt;
void rs.run({ runId, tenantId: "t", projectId: "p", environmentId: "e", planId: "p", planVersion: "1", engineAttemptId: 3 });

// @ts-expect-error run without its planVersion
void rs.run({ tenantId: "t", projectId: "p", environmentId: "e", planId: "p" });
// @ts-expect-error a misspelt run option
void rs.run({ tenantId: "t", projectId: "p", environmentId: "e", planId: "p", planVersion: "1", engineRunRefs: "wf" });
// @ts-expect-error an error code as a number
void step.failed({ errorCode: 5 });
// @ts-expect-error retryable as a string
void step.failed({}, { retryable: "yes" });
// @ts-expect-error a failure category the contract does not have
void run.failed({ failureCategory: "NETWORK" });
// @ts-expect-error durationMs as a string
void step.completed({ durationMs: "12" });
// @ts-expect-error a reason as a number
void step.skipped(3);
// @ts-expect-error a step without its id
void run.step();

// ---- the ergonomic types agree with the wire types ------------------------

type Equal<X, Y> = (<T>() => T extends X ? 1 : 2) extends <T>() => T extends Y ? 1 : 2 ? true : false;
function assertTrue<T extends true>(): T | void {}

type Defs = components["schemas"]["RunEventWrite"]["$defs"];
// Flat<> on both sides of an Equal: the identity check tells a member type
// of a generated interface from the same object type written out.
type Flat<T> = { [K in keyof T]: T[K] };
type NamedKeys<T> = keyof { [K in keyof T as string extends K ? never : number extends K ? never : K]: T[K] };

// Every event of the union is a valid wire event...
assertTrue<RunEventWrite extends WireRunEventWrite ? true : false>();
// ...with exactly the wire's members (none dropped, none added)...
assertTrue<Equal<keyof RunEventWrite, keyof WireRunEventWrite>>();
assertTrue<Equal<keyof WireRunEventWrite, "eventId" | "eventType" | "emittedAt" | "runId" | "tenantId" | "projectId" | "environmentId" | "planId" | "planVersion" | "stepId" | "engineAttemptId" | "logicalAttemptId" | "idempotencyKey" | "payload">>();
// ...each envelope member of the wire's type.
type Envelope = Exclude<keyof WireRunEventWrite, "eventType" | "stepId" | "payload">;
assertTrue<Equal<{ [K in Envelope]: RunEventWrite[K] }, { [K in Envelope]: WireRunEventWrite[K] }>>();
// The event types are the contract's twelve, split as the validator splits them.
assertTrue<Equal<RunEventWrite["eventType"], KnownEventType>>();
assertTrue<Equal<Extract<RunEventWrite, { stepId: string }>["eventType"], (typeof STEP_EVENT_TYPES)[number]>>();
assertTrue<Equal<Exclude<RunEventWrite, { stepId: string }>["eventType"], (typeof RUN_EVENT_TYPES)[number]>>();
// The payload fields the OpenAPI document types have the same names and types here.
assertTrue<Equal<Exclude<NamedKeys<FailurePayload>, NamedKeys<PayloadBase>>, keyof Defs["failurePayload"]>>();
assertTrue<Equal<Flat<Pick<FailurePayload, keyof Defs["failurePayload"]>>, Flat<Defs["failurePayload"]>>>();
assertTrue<Equal<Exclude<NamedKeys<SignalPayload>, NamedKeys<PayloadBase>>, keyof Defs["signalPayload"]>>();
assertTrue<Equal<Flat<Pick<SignalPayload, keyof Defs["signalPayload"]>>, Flat<Defs["signalPayload"]>>>();
assertTrue<Equal<NamedKeys<PayloadBase>, keyof Defs["payload"]>>();
assertTrue<Equal<Flat<Pick<PayloadBase, "sourceOccurredAt">>, Flat<Defs["payload"]>>>();
