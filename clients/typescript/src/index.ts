export {
  RunstreamClient,
  type AppendOutcome,
  type AppendResult,
  type BatchItemOutcome,
  type ClientOptions,
  type DrainResult,
} from "./client.js";
export {
  KNOWN_EVENT_TYPES,
  isKnownEventType,
  suggestEventType,
  type ArtifactRef,
  type CustomEventInput,
  type EventInput,
  type FailurePayload,
  type KnownEventType,
  type PayloadBase,
  type PayloadOf,
  type RunCompletedPayload,
  type RunCorrelation,
  type RunEventType,
  type RunEventWrite,
  type RunStartedPayload,
  type SignalPayload,
  type StepCompletedPayload,
  type StepEventType,
  type StepFailedPayload,
  type StepSkippedPayload,
  type WireRunEventWrite,
} from "./events.js";
export { RunHandle, StepHandle, type FailureOptions, type RunOptions, type StepOptions } from "./run.js";
export { newRunId } from "./runid.js";
export {
  BudgetExceededError,
  ClientClosedError,
  RunstreamError,
  SpoolCorruptError,
  SpoolFullError,
  SpoolLockedError,
  SpoolUnsafeError,
  UnknownEventTypeError,
  type ErrorCode,
} from "./errors.js";
export { IDEMPOTENCY_KEY_FORMULA, idempotencyKey } from "./key.js";
export { RUN_EVENT_TYPES, STEP_EVENT_TYPES, isRFC3339, validateEvent } from "./validate.js";
export type { components, paths } from "./api.js";
