// RunstreamClient: the producer client for Node.js (key, retries, the
// write-latency budget and the fail-open spool; docs/ARCHITECTURE.md,
// "Producers: the TypeScript client").
//
// append computes what the producer left out (eventId, emittedAt, the
// idempotency key), refuses locally what the API would refuse, then posts
// with retries (429, 503 and the other transient answers, transport errors:
// exponential backoff with full jitter, or Retry-After when the API sends
// one) until the write-latency budget is spent. Past the budget a fail-open
// event type is spooled durably and delivered later; any other type rejects
// with BudgetExceededError so the engine fails the step.
//
// Per-run order: appends of one run are serialized in call order. While a
// run has spooled events, its next append first delivers them (within the
// budget); when that fails, a fail-open event is spooled behind them and
// any other rejects, so runSeq order is always append order.

import { randomUUID } from "node:crypto";

import type { components } from "./api.js";
import { BudgetExceededError, ClientClosedError, RunstreamError, UnknownEventTypeError, type ErrorCode } from "./errors.js";
import { KNOWN_EVENT_TYPES, isKnownEventType, suggestEventType, type EventInput } from "./events.js";
import { idempotencyKey } from "./key.js";
import { RunHandle, type RunOptions } from "./run.js";
import { Spool, type SpoolRecord, type SpooledEvent } from "./spool.js";
import { validateEvent } from "./validate.js";

type Schemas = components["schemas"];

/** The API's answer to an append (201 inserted, 200 duplicate: idempotent true). */
export type AppendResult = Schemas["AppendResult"];

/** append's outcome: delivered (the API's AppendResult), or spooled for later delivery. */
export type AppendOutcome =
  | (AppendResult & { spooled: false })
  | { spooled: true; eventId: string; runId: string; idempotencyKey: string; reason: string };

/** appendBatch's outcome for one event: an AppendOutcome, or the error of that event. */
export type BatchItemOutcome = AppendOutcome | { spooled?: undefined; error: Error };

/**
 * The options of {@link RunstreamClient}. Every one but `url` has a default.
 *
 * @typeParam C - the event types of the producer's own that `allowEventTypes` lists
 */
/** A W3C traceparent, version 00 (what OpenTelemetry's propagator writes). */
const TRACEPARENT = /^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$/;

export interface ClientOptions<C extends string = never> {
  /** The API's base URL, e.g. http://127.0.0.1:8080. Required. */
  url: string;
  /**
   * A bearer token of RUNSTREAM_AUTH_TOKENS.
   * @defaultValue none: the API must run without tokens (development)
   */
  token?: string;
  /**
   * How long one append (or appendBatch) may take in all: the wait behind
   * earlier appends of the run, delivering the run's spooled events, every
   * retry.
   * @defaultValue 3000 (ms)
   */
  writeLatencyBudgetMs?: number;
  /**
   * Event types spooled when the budget runs out (failOpenForEventClass).
   * @defaultValue ["StepStarted"]
   */
  failOpen?: string[];
  /**
   * Event types that reject when the budget runs out. A type in neither list rejects too.
   * @defaultValue ["StepCompleted", "StepFailed"]
   */
  neverFailOpen?: string[];
  /**
   * Event types of the producer's own that append may send besides the
   * contract's twelve (KNOWN_EVENT_TYPES). Any other type is refused with
   * an {@link UnknownEventTypeError} ("did you mean StepStarted?"), since
   * the API would store it as a new type that no snapshot shows. Each must
   * be PascalCase. Listed as a literal array, the types also compile:
   * `new RunstreamClient({url, allowEventTypes: ["StepHeartbeat"]})`.
   * @defaultValue [] (the contract's types only)
   */
  allowEventTypes?: readonly C[];
  /**
   * The spool directory, one per process.
   * @defaultValue none: every type rejects past the budget
   */
  spoolDir?: string;
  /**
   * The most the spool's files may hold, in bytes.
   * @defaultValue 256 MiB
   */
  maxSpoolBytes?: number;
  /**
   * The fetch to use (tests, proxies).
   * @defaultValue Node's global fetch
   */
  fetch?: typeof globalThis.fetch;
  /**
   * How often the drainer started by start() looks at the spool (backing
   * off to 30 s while the API is away).
   * @defaultValue 1000 (ms)
   */
  drainIntervalMs?: number;
  /**
   * How long the drainer gives one request of a run's spooled events, retries
   * included. The run's appends wait behind it meanwhile, so a longer time
   * can push them past their budget.
   * @defaultValue writeLatencyBudgetMs
   */
  drainRequestTimeoutMs?: number;
  /**
   * First retry delay cap (doubling per attempt, full jitter).
   * @defaultValue 50 (ms)
   */
  backoffBaseMs?: number;
  /**
   * Largest retry delay cap.
   * @defaultValue 1000 (ms)
   */
  backoffMaxMs?: number;
  /**
   * Where warnings go (a torn spool record cut, a spooled event the API refused).
   * @defaultValue process.emitWarning
   */
  onWarning?: (message: string) => void;
  /**
   * Returns the W3C traceparent of the caller's current span, so that an
   * append continues the engine's trace through runstream (the API's span,
   * the relay, the projector). Called once per append or appendBatch, at
   * the call, in the caller's context. With OpenTelemetry:
   * `() => { const c: Record<string, string> = {}; propagation.inject(context.active(), c); return c.traceparent; }`.
   * A value that is not a traceparent is not sent.
   * @defaultValue none: no traceparent header
   */
  traceparent?: () => string | undefined;
}

/** What a drain did. */
export interface DrainResult {
  /** Spooled events the API accepted (or already had). */
  delivered: number;
  /** Spooled events the API refused for good, kept in <spoolDir>/rejected.ndjson. */
  rejected: number;
  /** Events still spooled. */
  remaining: number;
}

const MAX_BATCH_EVENTS = 500;
const MAX_BATCH_BYTES = 768 << 10;
const NEVER_RETRIED = new Set([400, 401, 403, 404, 405, 409, 413, 415, 431]);

interface Sent<T> {
  ok: true;
  value: T;
}
interface NotSent {
  ok: false;
  /** The API refused for good: no retry, no spool. */
  permanent?: RunstreamError;
  /** Why the budget ran out: the last answer or transport error. */
  cause?: unknown;
}

/**
 * The producer client. `C` is inferred from `allowEventTypes`: without it,
 * append takes the contract's event types only.
 */
export class RunstreamClient<const C extends string = never> {
  readonly url: string;
  readonly writeLatencyBudgetMs: number;
  readonly failOpen: ReadonlySet<string>;
  readonly neverFailOpen: ReadonlySet<string>;
  /** The types of the producer's own that append sends (allowEventTypes). */
  readonly allowEventTypes: ReadonlySet<string>;
  private readonly token?: string;
  private readonly fetchFn: typeof globalThis.fetch;
  private readonly spoolDir?: string;
  private readonly maxSpoolBytes: number;
  private readonly drainIntervalMs: number;
  private readonly drainRequestTimeoutMs: number;
  private readonly backoffBaseMs: number;
  private readonly backoffMaxMs: number;
  private readonly warn: (m: string) => void;
  private readonly headers: Record<string, string>;
  private readonly traceparentHook?: () => string | undefined;
  private spoolPromise: Promise<Spool> | null = null;
  private runLocks = new Map<string, Promise<void>>();
  private inflight = new Set<Promise<unknown>>();
  private closed = false;
  private drainTimer: NodeJS.Timeout | null = null;
  private draining: Promise<DrainResult> | null = null;
  private drainBackoffMs = 0;

  constructor(opts: ClientOptions<C>) {
    if (!opts || typeof opts.url !== "string" || opts.url === "") throw new TypeError("RunstreamClient: url is required");
    this.url = opts.url.replace(/\/+$/, "");
    this.token = opts.token;
    this.writeLatencyBudgetMs = opts.writeLatencyBudgetMs ?? 3000;
    if (!(this.writeLatencyBudgetMs > 0)) throw new TypeError("RunstreamClient: writeLatencyBudgetMs must be > 0");
    this.failOpen = new Set(opts.failOpen ?? ["StepStarted"]);
    this.neverFailOpen = new Set(opts.neverFailOpen ?? ["StepCompleted", "StepFailed"]);
    for (const t of this.failOpen) {
      if (this.neverFailOpen.has(t)) throw new TypeError(`RunstreamClient: ${t} is in both failOpen and neverFailOpen`);
    }
    this.allowEventTypes = new Set(opts.allowEventTypes ?? []);
    for (const t of this.allowEventTypes) {
      if (typeof t !== "string" || !/^[A-Z][A-Za-z0-9]*$/.test(t)) {
        throw new TypeError(`RunstreamClient: allowEventTypes holds ${JSON.stringify(t)}, which is not an event type (PascalCase, such as StepHeartbeat)`);
      }
    }
    this.spoolDir = opts.spoolDir;
    this.maxSpoolBytes = opts.maxSpoolBytes ?? 256 << 20;
    this.fetchFn = opts.fetch ?? globalThis.fetch;
    this.drainIntervalMs = opts.drainIntervalMs ?? 1000;
    this.drainRequestTimeoutMs = opts.drainRequestTimeoutMs ?? this.writeLatencyBudgetMs;
    this.backoffBaseMs = opts.backoffBaseMs ?? 50;
    this.backoffMaxMs = opts.backoffMaxMs ?? 1000;
    this.warn = opts.onWarning ?? ((m) => process.emitWarning(m, "RunstreamWarning"));
    this.traceparentHook = opts.traceparent;
    this.headers = { "content-type": "application/json" };
    if (this.token) this.headers.authorization = `Bearer ${this.token}`;
  }

  // ---- appends -------------------------------------------------------------

  /**
   * Appends one event. Resolves with the API's AppendResult ({spooled:
   * false}) or, for a fail-open type past the budget, once the event is
   * durably spooled ({spooled: true}). Rejects with a RunstreamError for an
   * event the API refuses (local validation: `local` true, nothing sent),
   * UnknownEventTypeError for a type neither the contract's nor in
   * allowEventTypes (nothing sent), BudgetExceededError for a type that may
   * not fail open, SpoolFullError, SpoolCorruptError.
   *
   * eventId (a random UUID v4), emittedAt (now) and idempotencyKey (the v2
   * key) are filled in when absent. {@link RunstreamClient.run} fills in the
   * rest as well.
   */
  append(event: EventInput<C>): Promise<AppendOutcome> {
    const started = Date.now();
    if (this.closed) return Promise.reject(new ClientClosedError("RunstreamClient is closed"));
    let ev: SpooledEvent;
    try {
      ev = this.prepare(event);
    } catch (e) {
      return Promise.reject(e);
    }
    const bad = validateEvent(ev);
    if (bad) return Promise.reject(bad);
    const tp = this.currentTraceparent();
    return this.track(this.withRuns([ev.runId], () => this.appendLocked(ev, started + this.writeLatencyBudgetMs, tp)));
  }

  /**
   * Appends events with POST /v1/events:batch (in chunks of at most 500),
   * one outcome per event in order. An event refused locally or by the API
   * gets {error}; past the budget, fail-open events are spooled and the
   * others get {error: BudgetExceededError}. Rejects only when the whole
   * request is refused (401, 403 for the token, 413) or the spool fails.
   */
  appendBatch(events: EventInput<C>[]): Promise<BatchItemOutcome[]> {
    const started = Date.now();
    if (this.closed) return Promise.reject(new ClientClosedError("RunstreamClient is closed"));
    if (!Array.isArray(events)) return Promise.reject(new TypeError("appendBatch takes an array of events"));
    const out: (BatchItemOutcome | undefined)[] = new Array(events.length);
    const valid: { i: number; ev: SpooledEvent }[] = [];
    events.forEach((e, i) => {
      try {
        const ev = this.prepare(e, `events[${i}].`);
        const bad = validateEvent(ev, `events[${i}].`);
        if (bad) out[i] = { error: bad };
        else valid.push({ i, ev });
      } catch (err) {
        out[i] = { error: err as Error };
      }
    });
    if (valid.length === 0) return Promise.resolve(out as BatchItemOutcome[]);
    const runs = [...new Set(valid.map((v) => v.ev.runId))];
    const deadline = started + this.writeLatencyBudgetMs;
    const tp = this.currentTraceparent();
    return this.track(
      this.withRuns(runs, async () => {
        await this.batchLocked(valid, out, deadline, tp);
        return out as BatchItemOutcome[];
      }),
    );
  }

  /**
   * A handle on one run: its methods append the run's events with the
   * correlation fields, eventId, emittedAt, the key and the attempt counters
   * filled in (see {@link RunHandle}). No request is made until a method is
   * called.
   */
  run(opts: RunOptions): RunHandle {
    return new RunHandle((e) => this.append(e), opts);
  }

  private prepare(e: EventInput<C>, fieldPrefix = ""): SpooledEvent {
    if (typeof e !== "object" || e === null || Array.isArray(e)) return e as unknown as SpooledEvent;
    const t: unknown = e.eventType;
    if (typeof t === "string" && t !== "" && !isKnownEventType(t) && !this.allowEventTypes.has(t)) throw unknownType(t, fieldPrefix);
    const ev: Record<string, unknown> = { ...e };
    if (ev.eventId === undefined) ev.eventId = randomUUID();
    if (ev.emittedAt === undefined) ev.emittedAt = new Date().toISOString();
    if (ev.idempotencyKey === undefined) {
      ev.idempotencyKey = idempotencyKey({
        runId: ev.runId as string,
        stepId: ev.stepId as string | undefined,
        logicalAttemptId: ev.logicalAttemptId as number,
        eventType: ev.eventType as string,
        planId: ev.planId as string,
        planVersion: ev.planVersion as string,
      });
    }
    return ev as SpooledEvent;
  }

  /** The caller's traceparent from the traceparent option, if it gives a valid one. */
  private currentTraceparent(): string | undefined {
    if (!this.traceparentHook) return undefined;
    let tp: unknown;
    try {
      tp = this.traceparentHook();
    } catch {
      return undefined; // tracing never fails an append
    }
    return typeof tp === "string" && TRACEPARENT.test(tp) ? tp : undefined;
  }

  private async appendLocked(ev: SpooledEvent, deadline: number, traceparent?: string): Promise<AppendOutcome> {
    const spool = await this.spoolIfAny();
    if (spool && spool.pendingFor(ev.runId) > 0) {
      const drained = await this.drainRun(spool, ev.runId, deadline);
      if (!drained.ok) {
        return this.pastBudget(ev, `run ${ev.runId} has ${spool.pendingFor(ev.runId)} spooled events the API did not take within the budget`, drained.cause);
      }
    }
    const r = await this.post<AppendResult>("/v1/events", JSON.stringify(ev), deadline, traceparent);
    if (r.ok) return { ...r.value, spooled: false };
    if (r.permanent) throw r.permanent;
    return this.pastBudget(ev, describeCause(r.cause), r.cause);
  }

  private async batchLocked(valid: { i: number; ev: SpooledEvent }[], out: (BatchItemOutcome | undefined)[], deadline: number, traceparent?: string) {
    const spool = await this.spoolIfAny();
    let send = valid;
    const late: { i: number; ev: SpooledEvent; reason: string; cause?: unknown }[] = [];
    if (spool) {
      const blocked = new Map<string, NotSent>();
      for (const run of new Set(valid.map((v) => v.ev.runId))) {
        if (spool.pendingFor(run) === 0) continue;
        const d = await this.drainRun(spool, run, deadline);
        if (!d.ok) blocked.set(run, d);
      }
      send = valid.filter((v) => !blocked.has(v.ev.runId));
      for (const v of valid) {
        const b = blocked.get(v.ev.runId);
        if (b) late.push({ ...v, reason: `run ${v.ev.runId} has spooled events the API did not take within the budget`, cause: b.cause });
      }
    }
    // A run with an event not delivered sends none of its later ones: they
    // would overtake it.
    const lateRuns = new Map<string, { reason: string; cause?: unknown }>();
    for (const chunk of chunks(send)) {
      const live = chunk.filter((v) => {
        const l = lateRuns.get(v.ev.runId);
        if (l) late.push({ ...v, ...l });
        return !l;
      });
      if (live.length === 0) continue;
      const body = `{"events":[${live.map((v) => v.json).join(",")}]}`;
      const r = await this.post<{ results: (AppendResult | { error: { code: string; message: string; field?: string } })[] }>(
        "/v1/events:batch",
        body,
        deadline,
        traceparent,
      );
      if (!r.ok) {
        if (r.permanent) throw r.permanent;
        const why = { reason: describeCause(r.cause), cause: r.cause };
        for (const v of live) {
          late.push({ ...v, ...why });
          lateRuns.set(v.ev.runId, why);
        }
        continue;
      }
      r.value.results.forEach((res, k) => {
        const { i } = live[k];
        if ("error" in res) {
          const e = res.error;
          out[i] = { error: new RunstreamError(e.code, statusOf(e.code), e.message, { field: e.field }) };
        } else {
          out[i] = { ...res, spooled: false };
        }
      });
    }
    // Past the budget: spool the fail-open events in order, refuse the others.
    late.sort((a, b) => a.i - b.i);
    const toSpool = late.filter((l) => spool && this.failOpen.has(l.ev.eventType));
    for (const l of late) {
      if (!toSpool.includes(l)) out[l.i] = { error: this.budgetError(l.ev, l.reason, l.cause) };
    }
    if (toSpool.length > 0) {
      await spool!.append(toSpool.map((l) => l.ev));
      for (const l of toSpool) out[l.i] = spooledOutcome(l.ev, l.reason);
    }
  }

  private async pastBudget(ev: SpooledEvent, reason: string, cause: unknown): Promise<AppendOutcome> {
    const spool = await this.spoolIfAny();
    if (spool && this.failOpen.has(ev.eventType)) {
      await spool.append([ev]);
      return spooledOutcome(ev, reason);
    }
    throw this.budgetError(ev, reason, cause);
  }

  private budgetError(ev: SpooledEvent, reason: string, cause: unknown): BudgetExceededError {
    const why = this.failOpen.has(ev.eventType)
      ? "it is fail-open but the client has no spoolDir"
      : this.neverFailOpen.has(ev.eventType)
        ? "it is in neverFailOpen"
        : "it is not in failOpen";
    return new BudgetExceededError(
      `${ev.eventType} for run ${ev.runId} was not appended within the write-latency budget of ${this.writeLatencyBudgetMs} ms (${reason}) and ${why}: fail the step`,
      { eventType: ev.eventType, runId: ev.runId, budgetMs: this.writeLatencyBudgetMs, cause },
    );
  }

  // ---- HTTP with retries -----------------------------------------------------

  private async post<T>(path: string, body: string, deadline: number, traceparent?: string): Promise<Sent<T> | NotSent> {
    const headers = traceparent ? { ...this.headers, traceparent } : this.headers;
    let cause: unknown;
    for (let attempt = 0; ; attempt++) {
      const remaining = deadline - Date.now();
      if (remaining <= 0) return { ok: false, cause };
      let retryAfter: number | undefined;
      try {
        const res = await this.fetchFn(this.url + path, {
          method: "POST",
          headers,
          body,
          signal: AbortSignal.timeout(remaining),
        });
        if (res.status === 200 || res.status === 201) return { ok: true, value: (await res.json()) as T };
        const err = await errorOf(res);
        if (NEVER_RETRIED.has(res.status) || res.status === 500) return { ok: false, permanent: err };
        cause = err;
        retryAfter = err.retryAfterSeconds;
      } catch (e) {
        cause = e; // transport error, or the budget's timeout
      }
      const cap = Math.min(this.backoffMaxMs, this.backoffBaseMs * 2 ** Math.min(attempt, 20));
      const delay = retryAfter !== undefined ? retryAfter * 1000 : Math.random() * cap;
      if (Date.now() + delay >= deadline) return { ok: false, cause };
      await sleep(delay);
    }
  }

  // ---- the spool and its drainer -----------------------------------------

  private spoolIfAny(): Promise<Spool | null> {
    if (this.spoolDir === undefined) return Promise.resolve(null);
    if (this.spoolPromise === null) {
      this.spoolPromise = Spool.open(this.spoolDir, { maxBytes: this.maxSpoolBytes, warn: this.warn });
      // A failed open (locked, corrupt) is reported to every caller and retried by the next one.
      this.spoolPromise.catch(() => (this.spoolPromise = null));
    }
    return this.spoolPromise;
  }

  /** Events spooled and not yet delivered (0 without a spool). */
  async spooled(): Promise<number> {
    const s = await this.spoolIfAny();
    return s ? s.size : 0;
  }

  /**
   * Opens the spool (taking its lock, replaying it) and starts delivering
   * spooled events in the background, run by run in append order, every
   * drainIntervalMs (backing off while the API is away).
   */
  async start(): Promise<void> {
    if (this.closed) throw new ClientClosedError("RunstreamClient is closed");
    await this.spoolIfAny();
    if (this.drainTimer !== null || this.spoolDir === undefined) return;
    const tick = async () => {
      if (this.closed) return;
      try {
        const r = await this.drain();
        this.drainBackoffMs = r.remaining === 0 ? 0 : Math.min(30_000, Math.max(this.drainIntervalMs, this.drainBackoffMs * 2));
      } catch (e) {
        this.warn(`runstream: draining the spool: ${(e as Error).message}`);
        this.drainBackoffMs = Math.min(30_000, Math.max(this.drainIntervalMs, this.drainBackoffMs * 2));
      }
      if (!this.closed) this.drainTimer = setTimeout(tick, Math.max(this.drainIntervalMs, this.drainBackoffMs)).unref();
    };
    this.drainTimer = setTimeout(tick, 0).unref();
  }

  /**
   * Delivers spooled events now, run by run in append order, each request
   * (up to 500 events of one run) given drainRequestTimeoutMs. Events the API refuses for good
   * (400, 413) go to <spoolDir>/rejected.ndjson with a warning; a run whose
   * events cannot be delivered now stays spooled.
   */
  drain(): Promise<DrainResult> {
    if (this.draining) return this.draining;
    this.draining = this.track(this.drainAll()).finally(() => (this.draining = null));
    return this.draining;
  }

  private async drainAll(): Promise<DrainResult> {
    const spool = await this.spoolIfAny();
    const result: DrainResult = { delivered: 0, rejected: 0, remaining: 0 };
    if (!spool) return result;
    for (const run of spool.runs()) {
      if (this.closed) break;
      const r = await this.withRuns([run], () => this.drainRun(spool, run, 0, true));
      result.delivered += r.delivered;
      result.rejected += r.rejected;
      if (!r.ok && !r.permanent && r.cause !== undefined) break; // the API is away: try later
    }
    result.remaining = spool.size;
    return result;
  }

  // drainRun sends the run's spooled events in order (the caller holds the
  // run's lock). ok when none is left. The drainer (renewBudget) sends 500
  // events a request; an append sends 50, so that an append meeting an API
  // that is still away costs little, and its first request, which tells,
  // returns fast.
  private async drainRun(
    spool: Spool,
    runId: string,
    deadline: number,
    renewBudget = false,
  ): Promise<NotSent & { delivered: number; rejected: number } | { ok: true; delivered: number; rejected: number }> {
    let delivered = 0;
    let rejected = 0;
    let limit = renewBudget ? MAX_BATCH_EVENTS : 50;
    for (;;) {
      const recs = await spool.eventsOf(runId, limit);
      if (recs.length === 0) return { ok: true, delivered, rejected };
      const chunk = chunks(recs.map((r, i) => ({ i, ev: r.event, rec: r })))[0];
      const body = `{"events":[${chunk.map((v) => v.json).join(",")}]}`;
      const r = await this.post<{ results: (AppendResult | { error: { code: string; message: string; field?: string } })[] }>(
        "/v1/events:batch",
        body,
        renewBudget ? Date.now() + this.drainRequestTimeoutMs : deadline,
      );
      if (!r.ok) {
        const p = r.permanent;
        if (p && (p.status === 400 || p.status === 413)) {
          // The request, not an event, was refused (too large, too many
          // events for this API): one event a request, and an event too
          // large on its own is refused for good.
          if (chunk.length > 1) {
            limit = 1;
            continue;
          }
          await spool.reject(chunk[0].rec, p);
          rejected++;
          this.warn(`runstream: the API refused spooled event ${String(chunk[0].ev.eventId)} (run ${runId}): ${p.code}: ${p.message}; kept in ${spool.dir}/rejected.ndjson`);
          continue;
        }
        if (p) throw p;
        return { ok: false, cause: r.cause, delivered, rejected };
      }
      const acks: number[] = [];
      let stop: RunstreamError | undefined;
      for (let k = 0; k < r.value.results.length; k++) {
        const res = r.value.results[k];
        const rec = chunk[k].rec;
        if (!("error" in res)) {
          acks.push(rec.n);
          delivered++;
          continue;
        }
        const err = new RunstreamError(res.error.code, statusOf(res.error.code), res.error.message, { field: res.error.field });
        if (err.code === "SCHEMA_VALIDATION_FAILED" || err.code === "PAYLOAD_TOO_LARGE") {
          await spool.ack(acks.splice(0));
          await spool.reject(rec, err);
          rejected++;
          this.warn(
            `runstream: the API refused spooled event ${String(rec.event.eventId)} (${rec.event.eventType}, run ${runId}): ${err.code} ${err.field ?? ""}: ${err.message}; kept in ${spool.dir}/rejected.ndjson`,
          );
        } else {
          stop ??= err;
        }
      }
      await spool.ack(acks);
      if (stop) {
        // FORBIDDEN, NOT_FOUND...: the run cannot be written with this token now; its events stay.
        this.warn(`runstream: spooled events of run ${runId} stay spooled: ${stop.code}: ${stop.message}`);
        return { ok: false, permanent: stop, cause: stop, delivered, rejected };
      }
    }
  }

  /** Stops the drainer, waits for appends and drains in flight, and releases the spool. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.drainTimer) clearTimeout(this.drainTimer);
    this.drainTimer = null;
    while (this.inflight.size > 0) await Promise.allSettled([...this.inflight]);
    if (this.spoolPromise) {
      const s = await this.spoolPromise.catch(() => null);
      await s?.close();
    }
  }

  // ---- plumbing --------------------------------------------------------------

  private track<T>(p: Promise<T>): Promise<T> {
    this.inflight.add(p);
    const done = () => this.inflight.delete(p);
    p.then(done, done);
    return p;
  }

  // withRuns runs fn holding the locks of runs, queued behind every earlier
  // caller that holds one of them (registered synchronously, so call order
  // is lock order and no two callers can wait for each other).
  private withRuns<T>(runs: string[], fn: () => Promise<T>): Promise<T> {
    let release!: () => void;
    const mine = new Promise<void>((r) => (release = r));
    const prevs: Promise<void>[] = [];
    for (const run of runs) {
      const prev = this.runLocks.get(run);
      if (prev) prevs.push(prev);
      this.runLocks.set(run, mine);
    }
    const run = async () => {
      if (prevs.length === 1) await prevs[0];
      else if (prevs.length > 1) await Promise.all(prevs);
      try {
        return await fn();
      } finally {
        release();
        for (const r of runs) if (this.runLocks.get(r) === mine) this.runLocks.delete(r);
      }
    };
    return run();
  }
}

function chunks<T extends { ev: SpooledEvent; rec?: SpoolRecord }>(items: T[]): (T & { json: string })[][] {
  const out: (T & { json: string })[][] = [];
  let cur: (T & { json: string })[] = [];
  let bytes = 0;
  for (const it of items) {
    const json = it.rec?.json ?? JSON.stringify(it.ev);
    if (cur.length > 0 && (cur.length >= MAX_BATCH_EVENTS || bytes + json.length > MAX_BATCH_BYTES)) {
      out.push(cur);
      cur = [];
      bytes = 0;
    }
    cur.push({ ...it, json });
    bytes += json.length + 1;
  }
  if (cur.length > 0) out.push(cur);
  return out;
}

function unknownType(t: string, fieldPrefix: string): UnknownEventTypeError {
  const near = suggestEventType(t);
  const hint = near
    ? `did you mean ${near}?`
    : `the contract's types are ${KNOWN_EVENT_TYPES.join(", ")}.`;
  return new UnknownEventTypeError(
    `eventType ${JSON.stringify(t)} is not one of the contract's event types; ${hint} ` +
      "The API would store it as a type of its own that no run snapshot shows. " +
      "To send a type of your own, list it in the client's allowEventTypes.",
    { eventType: t, suggestion: near, field: fieldPrefix + "eventType" },
  );
}

function spooledOutcome(ev: SpooledEvent, reason: string): AppendOutcome {
  return { spooled: true, eventId: ev.eventId as string, runId: ev.runId, idempotencyKey: ev.idempotencyKey as string, reason };
}

async function errorOf(res: Response): Promise<RunstreamError> {
  const ra = retryAfterSeconds(res.headers.get("retry-after"));
  let code: ErrorCode = codeOf(res.status);
  let message = `HTTP ${res.status}`;
  let field: string | undefined;
  try {
    const body = (await res.json()) as { error?: { code?: string; message?: string; field?: string } };
    if (body?.error?.code) code = body.error.code;
    if (body?.error?.message) message = body.error.message;
    field = body?.error?.field;
  } catch {
    // not the API's JSON (a proxy's page): the status decides
  }
  return new RunstreamError(code, res.status, message, { field, retryAfterSeconds: ra });
}

function retryAfterSeconds(h: string | null): number | undefined {
  if (h === null) return undefined;
  if (/^\s*\d+\s*$/.test(h)) return Number(h);
  const t = Date.parse(h);
  return Number.isNaN(t) ? undefined : Math.max(0, (t - Date.now()) / 1000);
}

function codeOf(status: number): ErrorCode {
  switch (status) {
    case 400:
      return "SCHEMA_VALIDATION_FAILED";
    case 401:
      return "UNAUTHENTICATED";
    case 403:
      return "FORBIDDEN";
    case 404:
      return "NOT_FOUND";
    case 405:
      return "METHOD_NOT_ALLOWED";
    case 408:
      return "REQUEST_TIMEOUT";
    case 413:
      return "PAYLOAD_TOO_LARGE";
    case 415:
      return "UNSUPPORTED_MEDIA_TYPE";
    case 429:
    case 502:
    case 503:
    case 504:
      return "UNAVAILABLE";
  }
  return "INTERNAL";
}

function statusOf(code: string): number {
  switch (code) {
    case "SCHEMA_VALIDATION_FAILED":
      return 400;
    case "UNAUTHENTICATED":
      return 401;
    case "FORBIDDEN":
      return 403;
    case "NOT_FOUND":
      return 404;
    case "PAYLOAD_TOO_LARGE":
      return 413;
    case "UNAVAILABLE":
      return 503;
  }
  return 500;
}

function describeCause(cause: unknown): string {
  if (cause === undefined) return "the write-latency budget ran out";
  if (cause instanceof RunstreamError) return `last answer ${cause.status} ${cause.code}`;
  const e = cause as Error & { cause?: { code?: string } };
  if (e.name === "TimeoutError" || e.name === "AbortError") return "the request outlasted the budget";
  return `transport error: ${e.cause?.code ?? e.message}`;
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

export type { SpoolRecord };
