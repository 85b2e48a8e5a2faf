// The run handle: what an engine holds for one run, so that it never
// repeats the run's correlation fields or works out attempt counters and
// idempotency keys by hand (ExecutionSemantics v1, RunEvents v1 section 5).

import type { AppendOutcome } from "./client.js";
import { newRunId } from "./runid.js";
import type {
  EventInput,
  FailurePayload,
  KnownEventType,
  PayloadBase,
  PayloadOf,
  RunCompletedPayload,
  RunCorrelation,
  RunStartedPayload,
  SignalPayload,
  StepCompletedPayload,
  StepFailedPayload,
  StepSkippedPayload,
} from "./events.js";

/** What {@link RunstreamClient.run} takes: the run's identity, once. */
export interface RunOptions {
  /**
   * The run. Pass the id the run already has when a second process (another
   * activity, a restarted worker) writes to it.
   * @defaultValue a new UUID v7 (time-ordered: the store files new runs at
   * the end of its run index)
   */
  runId?: string;
  tenantId: string;
  projectId: string;
  environmentId: string;
  planId: string;
  planVersion: string;
  /**
   * The engine's own id of the run (a Temporal workflow id), sent in
   * RunStarted's payload, where the snapshot shows it.
   * @defaultValue none
   */
  engineRunRef?: string;
  /**
   * The physical attempt of the process writing (a Temporal activity's
   * `info.attempt`, a worker restart count): on every event, in no key.
   * A {@link StepOptions.engineAttemptId} overrides it for a step.
   * @defaultValue 1 (RunEvents v1 section 5)
   */
  engineAttemptId?: number;
  /**
   * The logical attempt of the run-level events (a run retried as a whole).
   * @defaultValue 1
   */
  logicalAttemptId?: number;
}

/** What {@link RunHandle.step} takes. */
export interface StepOptions {
  /**
   * The logical attempt to write next: set it when another process ran the
   * earlier attempts (a Temporal activity retried on another worker), so
   * the handle cannot count them.
   * @defaultValue 1, then one more after each attempt that ended (failed, completed, skipped) when the step starts again
   */
  logicalAttemptId?: number;
  /**
   * The step's physical attempt.
   * @defaultValue the run's engineAttemptId
   */
  engineAttemptId?: number;
}

/** What {@link StepHandle.failed} takes besides the error. */
export interface FailureOptions {
  /**
   * Whether the step will be retried: written to the payload's `retryable`.
   * @defaultValue the error's own `retryable`, else absent
   */
  retryable?: boolean;
}

type Append = (e: EventInput) => Promise<AppendOutcome>;

/**
 * One run's events. Each method appends one event through the client's
 * append (so the budget, retries, fail-open and per-run order apply) with
 * the run's correlation fields, eventId, emittedAt and the idempotency key
 * filled in; calls are written in the order they are made, awaited or not.
 * Calling a method again with the same arguments (an engine's own retry)
 * writes the same key: the API answers `idempotent: true` and stores
 * nothing twice.
 */
export class RunHandle {
  /** The run's id (given, or made when the handle was). */
  readonly runId: string;
  readonly correlation: Readonly<RunCorrelation>;
  readonly engineRunRef?: string;
  readonly engineAttemptId: number;
  readonly logicalAttemptId: number;
  private readonly steps = new Map<string, StepHandle>();

  /** @internal Use {@link RunstreamClient.run}. */
  constructor(
    private readonly append: Append,
    opts: RunOptions,
  ) {
    if (typeof opts !== "object" || opts === null) throw new TypeError("run: options are required: {tenantId, projectId, environmentId, planId, planVersion}");
    this.runId = opts.runId ?? newRunId();
    this.correlation = Object.freeze({
      runId: this.runId,
      tenantId: opts.tenantId,
      projectId: opts.projectId,
      environmentId: opts.environmentId,
      planId: opts.planId,
      planVersion: opts.planVersion,
    });
    this.engineRunRef = opts.engineRunRef;
    this.engineAttemptId = attempt("engineAttemptId", opts.engineAttemptId);
    this.logicalAttemptId = attempt("logicalAttemptId", opts.logicalAttemptId);
  }

  /** RunStarted; `engineRunRef` of the run's options goes in the payload unless the payload has one. */
  started(payload?: RunStartedPayload): Promise<AppendOutcome> {
    const p = this.engineRunRef === undefined ? payload : { engineRunRef: this.engineRunRef, ...payload };
    return this.emit("RunStarted", p);
  }

  /** RunPaused (after a PAUSE signal was applied). */
  paused(payload?: SignalPayload): Promise<AppendOutcome> {
    return this.emit("RunPaused", payload);
  }

  /** RunResumed (after a RESUME signal was applied). */
  resumed(payload?: SignalPayload): Promise<AppendOutcome> {
    return this.emit("RunResumed", payload);
  }

  /** RunCompleted: every step succeeded. */
  completed(payload?: RunCompletedPayload): Promise<AppendOutcome> {
    return this.emit("RunCompleted", payload);
  }

  /** RunFailed: the run ended on an error (a step out of retries); the snapshot shows the error. */
  failed(error?: FailurePayload): Promise<AppendOutcome> {
    return this.emit("RunFailed", error);
  }

  /** RunCancelled. */
  cancelled(payload?: PayloadBase): Promise<AppendOutcome> {
    return this.emit("RunCancelled", payload);
  }

  /**
   * The handle of step `stepId`; the same one for the same id, so that it
   * counts the step's logical attempts. Options given apply from now on.
   * The run handle keeps every step handle it made for as long as it
   * lives: make one per run (or per activity), not one for all runs.
   */
  step(stepId: string, opts?: StepOptions): StepHandle {
    let s = this.steps.get(stepId);
    if (s === undefined) {
      s = new StepHandle(this, stepId, opts?.logicalAttemptId, opts?.engineAttemptId);
      this.steps.set(stepId, s);
    } else if (opts !== undefined) {
      s.set(opts);
    }
    return s;
  }

  /** @internal */
  emit<T extends KnownEventType>(
    eventType: T,
    payload: PayloadOf[T] | undefined,
    step?: { stepId: string; logicalAttemptId: number; engineAttemptId: number },
  ): Promise<AppendOutcome> {
    const ev: Record<string, unknown> = {
      eventType,
      ...this.correlation,
      engineAttemptId: step?.engineAttemptId ?? this.engineAttemptId,
      logicalAttemptId: step?.logicalAttemptId ?? this.logicalAttemptId,
    };
    if (step !== undefined) ev.stepId = step.stepId;
    if (payload !== undefined) ev.payload = payload;
    return this.append(ev as unknown as EventInput);
  }
}

/**
 * One step of a run. It counts the step's logical attempts: the first
 * `started()` writes attempt 1 (or StepOptions.logicalAttemptId); a
 * `started()` after the attempt ended (failed, completed or skipped) is a
 * retry and writes the next attempt. `completed`, `failed` and `skipped`
 * write the current attempt.
 */
export class StepHandle {
  readonly stepId: string;
  private attempt: number;
  private ended = false;
  private engineAttempt?: number;

  /** @internal Use {@link RunHandle.step}. */
  constructor(
    private readonly run: RunHandle,
    stepId: string,
    logicalAttemptId?: number,
    engineAttemptId?: number,
  ) {
    if (typeof stepId !== "string" || stepId === "") throw new TypeError("step: a stepId is required");
    this.stepId = stepId;
    this.attempt = attempt("logicalAttemptId", logicalAttemptId);
    if (engineAttemptId !== undefined) this.engineAttempt = attempt("engineAttemptId", engineAttemptId);
  }

  /** The logical attempt the next event is written with (after a `started()` that follows an ended attempt, one more). */
  get logicalAttemptId(): number {
    return this.attempt;
  }

  /** The physical attempt on this step's events. */
  get engineAttemptId(): number {
    return this.engineAttempt ?? this.run.engineAttemptId;
  }

  /** @internal */
  set(opts: StepOptions): void {
    if (opts.logicalAttemptId !== undefined) {
      this.attempt = attempt("logicalAttemptId", opts.logicalAttemptId);
      this.ended = false;
    }
    if (opts.engineAttemptId !== undefined) this.engineAttempt = attempt("engineAttemptId", opts.engineAttemptId);
  }

  /** StepStarted, of a new logical attempt when the last one ended (a retry). Fail-open by default. */
  started(payload?: PayloadBase): Promise<AppendOutcome> {
    if (this.ended) {
      this.attempt++;
      this.ended = false;
    }
    return this.emit("StepStarted", payload);
  }

  /** StepCompleted: `{result, durationMs, artifacts}`. */
  completed(payload?: StepCompletedPayload): Promise<AppendOutcome> {
    this.ended = true;
    return this.emit("StepCompleted", payload);
  }

  /**
   * StepFailed: `{errorCode, errorMessage, failureCategory, ...}`, with
   * `{retryable}` saying whether the engine will retry (the next
   * `started()` then writes the next logical attempt either way).
   */
  failed(error: StepFailedPayload = {}, opts: FailureOptions = {}): Promise<AppendOutcome> {
    this.ended = true;
    const p = opts.retryable === undefined ? error : { ...error, retryable: opts.retryable };
    return this.emit("StepFailed", p);
  }

  /** StepSkipped, with a reason for a human or `{reason, reasonCode}`. */
  skipped(reason?: string | StepSkippedPayload): Promise<AppendOutcome> {
    this.ended = true;
    return this.emit("StepSkipped", typeof reason === "string" ? { reason } : reason);
  }

  private emit<T extends KnownEventType>(eventType: T, payload: PayloadOf[T] | undefined): Promise<AppendOutcome> {
    return this.run.emit(eventType, payload, { stepId: this.stepId, logicalAttemptId: this.attempt, engineAttemptId: this.engineAttemptId });
  }
}

function attempt(name: string, v: number | undefined): number {
  if (v === undefined) return 1;
  if (!Number.isInteger(v) || v < 1 || v > 2147483647) throw new TypeError(`run: ${name} must be an integer from 1 to 2147483647, got ${String(v)}`);
  return v;
}
