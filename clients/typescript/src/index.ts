export {
  RunstreamClient,
  type AppendOutcome,
  type AppendResult,
  type BatchItemOutcome,
  type ClientOptions,
  type DrainResult,
  type EventInput,
  type RunEventWrite,
} from "./client.js";
export {
  BudgetExceededError,
  ClientClosedError,
  RunstreamError,
  SpoolCorruptError,
  SpoolFullError,
  SpoolLockedError,
  type ErrorCode,
} from "./errors.js";
export { IDEMPOTENCY_KEY_FORMULA, idempotencyKey } from "./key.js";
export { RUN_EVENT_TYPES, STEP_EVENT_TYPES, isRFC3339, validateEvent } from "./validate.js";
export type { components, paths } from "./api.js";
