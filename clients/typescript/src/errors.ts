// Typed errors. Every refusal of the API, and every local refusal of an
// event the API would refuse, is a RunstreamError carrying the API's code,
// HTTP status, field and message (README.md, "HTTP API"), so an engine
// branches on `code`, never on the message.

/** The API's error codes (components.schemas.ErrorCode). */
export type ErrorCode =
  | "SCHEMA_VALIDATION_FAILED"
  | "UNAUTHENTICATED"
  | "FORBIDDEN"
  | "NOT_FOUND"
  | "METHOD_NOT_ALLOWED"
  | "REQUEST_TIMEOUT"
  | "PAYLOAD_TOO_LARGE"
  | "UNSUPPORTED_MEDIA_TYPE"
  | "CONFLICT"
  | "RUN_ARCHIVED"
  | "UNAVAILABLE"
  | "INTERNAL"
  | (string & {});

/** An error the API answered, or that it would answer (local validation: status 400, `local` true). */
export class RunstreamError extends Error {
  override name = "RunstreamError";
  readonly code: ErrorCode;
  /** The HTTP status (400 for a local validation error); 0 when no answer came (a transport error). */
  readonly status: number;
  /** The member at fault (runId, payload.sourceOccurredAt, events[3].eventId), when the API names one. */
  readonly field?: string;
  /** True when the client refused the event itself, without sending it. */
  readonly local: boolean;
  /** Seconds from the API's Retry-After, when it sent one. */
  readonly retryAfterSeconds?: number;

  constructor(
    code: ErrorCode,
    status: number,
    message: string,
    opts: { field?: string; local?: boolean; retryAfterSeconds?: number; cause?: unknown } = {},
  ) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.code = code;
    this.status = status;
    this.field = opts.field;
    this.local = opts.local ?? false;
    this.retryAfterSeconds = opts.retryAfterSeconds;
  }

  /** The error as the API's body spells it: {code, message, field}. */
  toJSON(): { code: string; message: string; field?: string } {
    return this.field === undefined
      ? { code: this.code, message: this.message }
      : { code: this.code, message: this.message, field: this.field };
  }
}

/**
 * The write-latency budget ran out before the API accepted the event, and
 * the event may not fail open (its type is in neverFailOpen, or in neither
 * list, or the client has no spool). The engine should fail the step
 * (ExecutionSemantics v1 section 5). `cause` is the last answer or
 * transport error, when there was one.
 */
export class BudgetExceededError extends Error {
  override name = "BudgetExceededError";
  readonly code = "BUDGET_EXCEEDED";
  readonly eventType: string;
  readonly runId: string;
  readonly budgetMs: number;
  constructor(message: string, opts: { eventType: string; runId: string; budgetMs: number; cause?: unknown }) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.eventType = opts.eventType;
    this.runId = opts.runId;
    this.budgetMs = opts.budgetMs;
  }
}

/**
 * A fail-open event could not be spooled: the spool holds maxSpoolBytes
 * already. The event was not spooled (the append rejects); nothing spooled
 * before is lost. Restore the API so the spool drains, or raise maxSpoolBytes.
 */
export class SpoolFullError extends Error {
  override name = "SpoolFullError";
  readonly code = "SPOOL_FULL";
  readonly dir: string;
  readonly maxSpoolBytes: number;
  constructor(message: string, opts: { dir: string; maxSpoolBytes: number; cause?: unknown }) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.dir = opts.dir;
    this.maxSpoolBytes = opts.maxSpoolBytes;
  }
}

/**
 * A spool file holds a record that fails its checksum or does not parse
 * before its last record (a torn last record, a write a crash interrupted,
 * is cut with a warning instead). Nothing was deleted or rewritten: move the
 * directory aside for inspection and start with an empty spoolDir.
 */
export class SpoolCorruptError extends Error {
  override name = "SpoolCorruptError";
  readonly code = "SPOOL_CORRUPT";
  readonly file: string;
  readonly offset: number;
  constructor(message: string, opts: { file: string; offset: number }) {
    super(message);
    this.file = opts.file;
    this.offset = opts.offset;
  }
}

/**
 * The spool directory, or a file in it, is one another local user could
 * have written or redirected: a symbolic link, owned by another user,
 * writable by its group or by others, not a regular file. Nothing in it was
 * read, delivered or written to. The message names the path and the fix
 * (chmod 0700 or chown the directory, remove the file after inspecting it,
 * or choose another spoolDir).
 */
export class SpoolUnsafeError extends Error {
  override name = "SpoolUnsafeError";
  readonly code = "SPOOL_UNSAFE";
  readonly path: string;
  constructor(message: string, opts: { path: string }) {
    super(message);
    this.path = opts.path;
  }
}

/** Another process (or another client in this one) holds the spool directory. */
export class SpoolLockedError extends Error {
  override name = "SpoolLockedError";
  readonly code = "SPOOL_LOCKED";
  readonly dir: string;
  constructor(message: string, opts: { dir: string }) {
    super(message);
    this.dir = opts.dir;
  }
}

/** The client was closed. */
export class ClientClosedError extends Error {
  override name = "ClientClosedError";
  readonly code = "CLIENT_CLOSED";
}

/**
 * The event's type is not one of the contract's twelve (RunEvents v1) and
 * the client was not told to send it (`allowEventTypes`). The API would
 * store it as a type of its own, which no snapshot shows: a misspelt
 * `StepStartd` would leave its step missing without a word. `suggestion`
 * is the known type it is nearest to, when one is near. Nothing was sent.
 */
export class UnknownEventTypeError extends Error {
  override name = "UnknownEventTypeError";
  readonly code = "UNKNOWN_EVENT_TYPE";
  /** Always "eventType" (prefixed events[i]. in a batch), as a RunstreamError's field. */
  readonly field: string;
  readonly eventType: string;
  /** The nearest known type ("did you mean StepStarted?"), if one is near. */
  readonly suggestion?: string;
  /** True: the client refused the event itself. */
  readonly local = true;
  constructor(message: string, opts: { eventType: string; suggestion?: string; field?: string }) {
    super(message);
    this.eventType = opts.eventType;
    this.suggestion = opts.suggestion;
    this.field = opts.field ?? "eventType";
  }
}
