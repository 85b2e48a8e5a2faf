import { createHash } from "node:crypto";

/** The v2 formula (docs/CONTRACT.md, "The idempotency key"), as the API quotes it. */
export const IDEMPOTENCY_KEY_FORMULA =
  'lowercase hex SHA256(runId + "|" + stepIdNormalized + "|" + logicalAttemptId + "|" + eventType + "|" + planId + "|" + planVersion), stepIdNormalized = stepId for step events and "RUN" for run events, logicalAttemptId in decimal';

/**
 * The v2 idempotency key (docs/CONTRACT.md): lowercase hex
 * SHA-256 of runId|stepIdNormalized|logicalAttemptId|eventType|planId|planVersion,
 * UTF-8, where stepIdNormalized is "RUN" when stepId is absent or empty
 * (run-level events) and logicalAttemptId is written in decimal.
 */
export function idempotencyKey(k: {
  runId: string;
  stepId?: string | null;
  logicalAttemptId: number;
  eventType: string;
  planId: string;
  planVersion: string;
}): string {
  const step = k.stepId ? k.stepId : "RUN";
  const pre = `${k.runId}|${step}|${decimal(k.logicalAttemptId)}|${k.eventType}|${k.planId}|${k.planVersion}`;
  return createHash("sha256").update(pre, "utf8").digest("hex");
}

function decimal(n: number): string {
  // Integers print in decimal without an exponent up to 2^53; the API
  // refuses attempts above 2^31-1 anyway.
  return Number.isInteger(n) ? BigInt(n).toString(10) : String(n);
}
