// Run ids made by the client: UUID v7, in the order they were made, each
// carrying the time it was made.
import { test } from "node:test";
import assert from "node:assert/strict";

import { newRunId } from "../src/runid.js";
import { newRunId as exported } from "../src/index.js";

const V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

test("run ids: UUID v7, strictly in the order made, many in one millisecond", () => {
  const n = 20000;
  const before = Date.now();
  const ids = Array.from({ length: n }, () => newRunId());
  const after = Date.now();
  for (let i = 0; i < n; i++) {
    assert.match(ids[i]!, V7);
    if (i > 0) assert.ok(ids[i - 1]! < ids[i]!, `id ${i} ${ids[i]} does not sort after ${ids[i - 1]}`);
  }
  // Past 4,096 ids in a millisecond the counter carries into the time, so
  // the last may run ahead of the clock by n / 4,096 ms at most.
  const first = parseInt(ids[0]!.slice(0, 8) + ids[0]!.slice(9, 13), 16);
  const last = parseInt(ids[n - 1]!.slice(0, 8) + ids[n - 1]!.slice(9, 13), 16);
  assert.ok(first >= before && first <= after, `first id carries ${first}, made between ${before} and ${after}`);
  assert.ok(last <= after + Math.ceil(n / 4096), `last id carries ${last}, made by ${after}`);
});

test("run ids: newRunId is the package's", () => {
  assert.equal(exported, newRunId);
});
