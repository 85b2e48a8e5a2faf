// Local validation against the API on generated events: valid events with
// one to three members replaced by values from a pool of troublemakers (or
// removed), sent to the real API in batches. For every item the local
// answer must be the API's: the same error, or none when the API stored it
// (or refused it only for its tenant, which is checked after validation).
import { test } from "node:test";
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";

import { idempotencyKey, validateEvent } from "../src/index.js";
import { full, newRun, postRaw } from "./env.js";

function mulberry32(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const TYPES = ["RunStarted", "RunCompleted", "RunFailed", "RunPaused", "StepStarted", "StepCompleted", "StepFailed", "StepSkipped", "StepRetried"];
const FIELDS = [
  "eventId", "eventType", "emittedAt", "runId", "tenantId", "projectId", "environmentId", "planId", "planVersion",
  "stepId", "engineAttemptId", "logicalAttemptId", "idempotencyKey", "payload",
  "payload.sourceOccurredAt", "payload.durationMs", "payload.artifacts", "payload.failureCategory", "payload.reason", "payload.startedAt",
];
const POOL: unknown[] = [
  undefined, "", "a|b", "x\u0000y", "bad\ud800", "\udc00", "ok", "é".repeat(130), "e".repeat(256), "ctl\u0007", "c1\u0085",
  0, -1, 1.5, 2147483647, 2147483648, "1", null, true, [], {}, [{}], [{ uri: "u", kind: "k", sizeBytes: -2 }],
  "2026-02-30T00:00:00Z", "2026-02-16T10:30:00+01:00", "2026-02-16T10:30:00.5z", "RunStarted", "onStepStarted", "step_failed",
  "3f1c2a4e-8b7d-1c6a-9e2f-1a2b3c4d5e6f", "USER", "BAD", "f".repeat(64), "F".repeat(64),
];

test("validation equals the API's answer on 300 generated events", async () => {
  const seed = Number(process.env.RUNSTREAM_TS_SEED ?? Date.now() % 100000);
  const rnd = mulberry32(seed);
  const pick = <T>(a: T[]): T => a[Math.floor(rnd() * a.length)];
  for (let round = 0; round < 3; round++) {
    const evs: Record<string, unknown>[] = [];
    for (let i = 0; i < 100; i++) {
      const e = full(newRun(), pick(TYPES), "step-1");
      e.eventId = randomUUID();
      const rekey = rnd() < 0.7;
      for (let k = 1 + Math.floor(rnd() * 3); k > 0; k--) {
        const f = pick(FIELDS);
        const v = structuredClone(pick(POOL));
        if (f.startsWith("payload.")) {
          if (typeof e.payload !== "object" || e.payload === null || Array.isArray(e.payload)) e.payload = {};
          (e.payload as Record<string, unknown>)[f.slice(8)] = v;
        } else if (v === undefined) {
          delete e[f];
        } else {
          e[f] = v;
        }
      }
      // Mostly with the key of what is left, so the other rules are reached.
      if (rekey && typeof e.idempotencyKey === "string" && /^[0-9a-f]{64}$/.test(e.idempotencyKey)) {
        try {
          e.idempotencyKey = idempotencyKey(e as any);
        } catch {
          // an attempt that is not a number: keep the key
        }
      }
      evs.push(e);
    }
    const answer = await postRaw("/v1/events:batch", JSON.stringify({ events: evs }));
    assert.equal(answer.status, 200, `seed ${seed}: ${JSON.stringify(answer.body)}`);
    evs.forEach((e, i) => {
      const got = answer.body.results[i];
      const local = validateEvent(e, `events[${i}].`);
      const why = `seed ${seed} (RUNSTREAM_TS_SEED), round ${round}, event ${JSON.stringify(e)}`;
      if (!("error" in got) || got.error.code === "FORBIDDEN") {
        assert.equal(local, null, `${why}: the API answered ${JSON.stringify(got)}, locally ${JSON.stringify(local)}`);
      } else {
        assert.deepEqual(local?.toJSON(), got.error, why);
      }
    });
  }
});
