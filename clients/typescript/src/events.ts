// The ergonomic event types: a discriminated union on eventType over the
// contract's twelve types (RunEvents v1 section 4, ExecutionSemantics v1
// section 3), each with its payload's RunEvents v1 section 4.3 fields, laid
// on top of the wire type generated from the OpenAPI document (api.ts).
// test-types/events.ts checks, under tsc --noEmit, that the two agree and
// that the mistakes an engine makes (a misspelt member, a string attempt, a
// stepId on a run event) do not compile.

import type { components } from "./api.js";
import { RUN_EVENT_TYPES, STEP_EVENT_TYPES } from "./validate.js";

type GeneratedWrite = components["schemas"]["RunEventWrite"];
type Defs = GeneratedWrite["$defs"];

/** T without its index signatures (the named members only). */
type NamedMembers<T> = { [K in keyof T as string extends K ? never : number extends K ? never : K]: T[K] };

/** Flattens an intersection into one object type (readable hovers, one excess-property check). */
type Flat<T> = { [K in keyof T]: T[K] } & {};

/**
 * The wire shape of an event as the OpenAPI document states it
 * (components.schemas.RunEventWrite, generated into api.ts): the envelope's
 * named members, eventType any PascalCase string, payload any object. The
 * API takes any event of this shape; {@link RunEventWrite} is the stricter
 * type a producer writes.
 */
export type WireRunEventWrite = Omit<NamedMembers<GeneratedWrite>, "$defs" | "payload"> & {
  payload?: Defs["payload"] & { [field: string]: unknown };
};

/** A run-level event type of the contract (no stepId). */
export type RunEventType = (typeof RUN_EVENT_TYPES)[number];
/** A step-level event type of the contract (stepId required). */
export type StepEventType = (typeof STEP_EVENT_TYPES)[number];
/** The twelve event types of the contract, the ones the client sends without `allowEventTypes`. */
export type KnownEventType = RunEventType | StepEventType;

/** An artifact stored elsewhere, by reference (ExecutionSemantics v1 section 2). */
export type ArtifactRef = Defs["artifactRef"];

/**
 * What every payload may carry. A payload may also hold fields of the
 * producer's own (RunEvents v1 section 4.3: "MAY contain additional
 * data"); the API stores them as sent, so they are allowed here, while the
 * fields the contract names are typed.
 */
export interface PayloadBase {
  /** When the thing happened at the source (RFC 3339), if not when the event was emitted. */
  sourceOccurredAt?: string;
  [field: string]: unknown;
}

/** RunStarted (ExecutionSemantics v1 Appendix A.1). */
export interface RunStartedPayload extends PayloadBase {
  /** The engine's own id of the run (a Temporal workflow id), shown in the snapshot. */
  engineRunRef?: string;
  /** The engine, such as "temporal". */
  engineType?: string;
  /** RFC 3339; the snapshot's startedAt (default: the event's time). */
  startedAt?: string;
  planRef?: Record<string, unknown>;
  context?: Record<string, unknown>;
}

/** StepCompleted (RunEvents v1 section 4.3, success events). */
export interface StepCompletedPayload extends PayloadBase {
  /** The step's result; its schema varies by step type. */
  result?: unknown;
  /** How long the attempt ran, in milliseconds (>= 0). */
  durationMs?: number;
  artifacts?: ArtifactRef[];
}

/** StepFailed and RunFailed (RunEvents v1 section 4.3, error events). */
export interface FailurePayload extends PayloadBase {
  /** Machine-readable, such as "TIMEOUT" or "DB_CONNECTION_FAILED". */
  errorCode?: string;
  /** For a human. */
  errorMessage?: string;
  /** Whether this failure is retryable. */
  retryable?: boolean;
  stack?: string;
  failureCategory?: "USER" | "SYSTEM" | "PLATFORM" | "TIMEOUT";
  /** Such as "activity", "engine", "planner", "secrets". */
  failureSource?: string;
}

/** StepFailed: a {@link FailurePayload}, with the attempt's artifacts and duration. */
export interface StepFailedPayload extends FailurePayload {
  artifacts?: ArtifactRef[];
  /** How long the attempt ran, in milliseconds; runstream's reducer reads it as for StepCompleted. */
  durationMs?: number;
}

/** StepSkipped (RunEvents v1 section 4.3, skip events). */
export interface StepSkippedPayload extends PayloadBase {
  /** For a human. */
  reason?: string;
  /** Such as "DEPENDENCY_FAILED", "CONDITION_FALSE", "OPERATOR_SKIP". */
  reasonCode?: string;
}

/** RunPaused and RunResumed (RunEvents v1 section 4.3, signal events). */
export interface SignalPayload extends PayloadBase {
  /** The signal that paused or resumed the run. */
  signalId?: string;
  reason?: string;
  /** What the adapter reports while paused, such as "DRAINING". */
  substatus?: string;
}

/** RunCompleted: the run's artifacts besides its steps'. */
export interface RunCompletedPayload extends PayloadBase {
  artifacts?: ArtifactRef[];
}

/** The payload type of each known event type. */
export interface PayloadOf {
  RunQueued: PayloadBase;
  RunApproved: PayloadBase;
  RunStarted: RunStartedPayload;
  RunPaused: SignalPayload;
  RunResumed: SignalPayload;
  RunCompleted: RunCompletedPayload;
  RunFailed: FailurePayload;
  RunCancelled: PayloadBase;
  StepStarted: PayloadBase;
  StepCompleted: StepCompletedPayload;
  StepFailed: StepFailedPayload;
  StepSkipped: StepSkippedPayload;
}

/** The identifiers every event of a run repeats. */
export interface RunCorrelation {
  /** The run: any identifier of 1-255 bytes without "|"; an id that grows with time (the UUID v7 `run()` makes) keeps the store's run index cheap to write. */
  runId: string;
  tenantId: string;
  projectId: string;
  environmentId: string;
  planId: string;
  planVersion: string;
}

/** The envelope members the client fills in when absent. */
interface Filled {
  /** UUID v4; default a random one. */
  eventId: string;
  /** RFC 3339 with a zone, the engine's clock; default now. */
  emittedAt: string;
  /** The v2 key ({@link idempotencyKey}); default computed. */
  idempotencyKey: string;
}

interface Attempts {
  /** Physical attempt (worker restarts, infrastructure retries): 1 or more. Not in the key. */
  engineAttemptId: number;
  /** Logical attempt (retries by policy or signal): 1 or more. Part of the key. */
  logicalAttemptId: number;
}

type Level<T extends string> = T extends StepEventType
  ? {
      /** The step: required on step-level events. */
      stepId: string;
    }
  : {
      /** Run-level events carry no stepId. */
      stepId?: never;
    };

type Complete<T extends KnownEventType> = Flat<
  { eventType: T } & Filled & RunCorrelation & Attempts & Level<T> & { payload?: PayloadOf[T] }
>;
type Input<T extends KnownEventType> = Flat<
  { eventType: T } & Partial<Filled> & RunCorrelation & Attempts & Level<T> & { payload?: PayloadOf[T] }
>;

/**
 * An event of the contract as the API stores it (RunEvents v1 section
 * 4.1): one member per event type, step-level types with a `stepId`, run
 * level types without, each payload with its section 4.3 fields. A member
 * the type does not name (`payloads`, `runID`) does not compile.
 */
export type RunEventWrite = { [T in KnownEventType]: Complete<T> }[KnownEventType];

/**
 * An event of a type of the producer's own, listed in `allowEventTypes`:
 * the envelope, an optional stepId, any payload object. The API stores it
 * (forward compatibility); snapshots ignore it.
 */
export type CustomEventInput<C extends string> = Flat<
  { eventType: C } & Partial<Filled> & RunCorrelation & Attempts & { stepId?: string; payload?: Record<string, unknown> }
>;

/**
 * What `append` takes: a {@link RunEventWrite} whose eventId, emittedAt and
 * idempotencyKey may be left out (the client fills them in), or, for a
 * client made with `allowEventTypes`, an event of one of those types.
 */
export type EventInput<C extends string = never> =
  | { [T in KnownEventType]: Input<T> }[KnownEventType]
  | ([C] extends [never] ? never : CustomEventInput<Exclude<C, KnownEventType>>);

/** The contract's event types, run-level then step-level (the server's list, store/types.go). */
export const KNOWN_EVENT_TYPES: readonly KnownEventType[] = [...RUN_EVENT_TYPES, ...STEP_EVENT_TYPES];

const KNOWN = new Set<string>(KNOWN_EVENT_TYPES);

/** Reports whether t is one of the contract's twelve event types. */
export function isKnownEventType(t: string): t is KnownEventType {
  return KNOWN.has(t);
}

/**
 * The known event type nearest to t, for "did you mean ...?": compared
 * without case and without an "on" prefix, at an edit distance
 * (insertions, deletions, substitutions, swaps of neighbours) of at most 2,
 * or 3 for types of 12 letters or more; undefined when none is that near.
 */
export function suggestEventType(t: string): KnownEventType | undefined {
  const s = t.toLowerCase();
  const forms = s.startsWith("on") ? [s, s.slice(2)] : [s];
  let best: KnownEventType | undefined;
  let bestD = Infinity;
  for (const k of KNOWN_EVENT_TYPES) {
    const d = Math.min(...forms.map((f) => editDistance(f, k.toLowerCase())));
    if (d < bestD) {
      best = k;
      bestD = d;
    }
  }
  return best !== undefined && bestD <= (best.length >= 12 ? 3 : 2) ? best : undefined;
}

// editDistance is the optimal string alignment distance: Levenshtein plus
// the swap of two neighbours ("Stpe").
function editDistance(a: string, b: string): number {
  if (Math.abs(a.length - b.length) > 3) return 4;
  const d: number[][] = Array.from({ length: a.length + 1 }, (_, i) => [i, ...new Array<number>(b.length).fill(0)]);
  for (let j = 0; j <= b.length; j++) d[0][j] = j;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      d[i][j] = Math.min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d[i][j] = Math.min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[a.length][b.length];
}
