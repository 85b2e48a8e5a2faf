import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";

import { idempotencyKey } from "../src/index.js";
import { testdataDir } from "./env.js";

// The peer implementation's vectors (the repository's copy in
// testdata/peer, see testdata/README.md): the v2 formula of
// docs/CONTRACT.md, "The idempotency key".
test("idempotencyKey matches the peer's v2.0.1 vectors", () => {
  const file = join(testdataDir, "peer", "RunEvents.v2.0.1.idempotency_vectors.json");
  const doc = JSON.parse(readFileSync(file, "utf8")) as { vectors: any[] };
  assert.ok(doc.vectors.length >= 5, `${file} holds vectors`);
  for (const v of doc.vectors) {
    assert.equal(
      idempotencyKey({
        runId: v.runId,
        stepId: v.stepId,
        logicalAttemptId: v.logicalAttemptId,
        eventType: v.eventType,
        planId: v.planId,
        planVersion: v.planVersion,
      }),
      v.expectedSha256Hex,
      v.name,
    );
  }
});

test("idempotencyKey hashes RUN for run events, the UTF-8 bytes and the decimal attempt", () => {
  const run = { runId: "r", logicalAttemptId: 1, eventType: "RunStarted", planId: "p", planVersion: "1" };
  assert.equal(idempotencyKey(run), idempotencyKey({ ...run, stepId: "RUN" }));
  assert.equal(idempotencyKey(run), idempotencyKey({ ...run, stepId: "" }));
  // sha256("é|s|12|StepStarted|p|2"), computed with sha256sum.
  assert.equal(
    idempotencyKey({ runId: "é", stepId: "s", logicalAttemptId: 12, eventType: "StepStarted", planId: "p", planVersion: "2" }),
    "bd07f3b7c2ed6744aa00aa5241a2af6add9105e6193f5f50188d90687000fd4a",
  );
});
