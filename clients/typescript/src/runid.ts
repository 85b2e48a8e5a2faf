// Run ids the client makes when the engine names none: UUID v7 (RFC 9562),
// time-ordered, so the store files each new run at the end of its run
// index instead of on a random page of it (each page first written after a
// Postgres checkpoint costs a whole page of WAL).

import { randomFillSync } from "node:crypto";

let lastMs = 0;
let lastSeq = 0;

/**
 * A new UUID v7: 48 bits of Unix milliseconds, then a 12-bit counter that
 * keeps the ids one process makes in the same millisecond in order, then
 * 62 random bits.
 */
export function newRunId(): string {
  let ms = Date.now();
  let seq = 0;
  if (ms <= lastMs) {
    // The same millisecond (or a clock stepped back): count on from the last.
    ms = lastMs;
    seq = lastSeq + 1;
    if (seq > 0xfff) {
      ms += 1;
      seq = 0;
    }
  }
  lastMs = ms;
  lastSeq = seq;

  const b = randomFillSync(new Uint8Array(16));
  // Milliseconds need 48 bits: more than 32-bit bitwise operators keep.
  const hi = Math.floor(ms / 0x10000);
  b[0] = (hi >>> 24) & 0xff;
  b[1] = (hi >>> 16) & 0xff;
  b[2] = (hi >>> 8) & 0xff;
  b[3] = hi & 0xff;
  b[4] = (ms >>> 8) & 0xff;
  b[5] = ms & 0xff;
  b[6] = 0x70 | (seq >>> 8);
  b[7] = seq & 0xff;
  b[8] = 0x80 | (b[8]! & 0x3f);
  const hex = Buffer.from(b).toString("hex");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
