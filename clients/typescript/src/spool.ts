// The durable local spool of fail-open events (DESIGN.md section 1.15).
//
// A directory holding:
//
//   LOCK                  the pid and a random token of the process that
//                         holds the spool; two processes never share one
//   seg-000000000001.log  append-only segments of records, one a line:
//                         "<8 hex of SHA-256 of the JSON> <JSON>\n", where
//                         the JSON is {"n": N, "e": event} (an event, N its
//                         spool sequence number) or {"a": [N, ...]} (events
//                         delivered)
//   rejected.ndjson       events the API refused for good while draining
//                         (400, 413), with the answer: kept, never deleted
//
// Every write is fsynced before the caller hears of it, and so is the
// directory when a file is created. On open the segments are replayed: the
// pending events are those without an ack, in N order, which is append
// order and so per-run order. A torn last record of the last segment (a
// write a crash cut short) is cut with a warning; a bad record anywhere else
// is a SpoolCorruptError naming the file and offset, and nothing is deleted
// or rewritten. Segments are deleted only once every event in them, and in
// every older segment, was delivered.

import { createHash, randomBytes } from "node:crypto";
import { hostname } from "node:os";
import { mkdir, open, readdir, readFile, rename, rm, stat, unlink, link, type FileHandle } from "node:fs/promises";
import { join } from "node:path";

import { SpoolCorruptError, SpoolFullError, SpoolLockedError } from "./errors.js";

/** An event as written to the spool: what append would have sent. */
export type SpooledEvent = Record<string, unknown> & { runId: string; eventType: string };

export interface SpoolRecord {
  n: number;
  event: SpooledEvent;
  /** JSON.stringify(event), kept so a drain does not encode it again. */
  json: string;
}

const SEGMENT_RE = /^seg-(\d{12})\.log$/;
const DEFAULT_SEGMENT_BYTES = 4 << 20;

interface Segment {
  index: number;
  file: string;
  bytes: number;
  pending: number; // events in it not yet delivered
}

interface Write {
  line: Buffer;
  events?: SpoolRecord[];
  acks?: number[];
  resolve: () => void;
  reject: (e: unknown) => void;
}

export class Spool {
  readonly dir: string;
  readonly maxBytes: number;
  private readonly warn: (msg: string) => void;
  private readonly segmentBytes: number;
  private readonly lockToken: string;
  private segments: Segment[] = [];
  private fh: FileHandle | null = null; // the last segment, open for appending
  private nextN = 1;
  private nextSegment = 1;
  private reserved = 0; // bytes of events accepted and not yet written
  private pending = new Map<number, SpoolRecord & { seg: number }>();
  // runId -> its pending n, ascending, from items[head] on: deliveries
  // come from the head, so acking is O(1).
  private byRun = new Map<string, { items: number[]; head: number }>();
  private queue: Write[] = [];
  private flushing: Promise<void> | null = null;
  private closed = false;

  private constructor(dir: string, maxBytes: number, warn: (msg: string) => void, segmentBytes: number) {
    this.dir = dir;
    this.maxBytes = maxBytes;
    this.warn = warn;
    this.segmentBytes = segmentBytes;
    this.lockToken = `${process.pid}:${hostname()}:${randomBytes(8).toString("hex")}`;
  }

  /** Opens (creating it when absent) and locks the spool in dir, then replays it. */
  static async open(
    dir: string,
    opts: { maxBytes: number; warn: (msg: string) => void; segmentBytes?: number },
  ): Promise<Spool> {
    await mkdir(dir, { recursive: true, mode: 0o700 });
    const s = new Spool(dir, opts.maxBytes, opts.warn, opts.segmentBytes ?? Math.min(DEFAULT_SEGMENT_BYTES, Math.max(4096, opts.maxBytes >> 2)));
    await s.lock();
    try {
      await s.replay();
    } catch (e) {
      await s.unlock();
      throw e;
    }
    return s;
  }

  /** Bytes the spool's segments take on disk. */
  get bytes(): number {
    return this.segments.reduce((a, s) => a + s.bytes, 0);
  }

  /** How many events are spooled and not yet delivered. */
  get size(): number {
    return this.pending.size;
  }

  pendingFor(runId: string): number {
    const q = this.byRun.get(runId);
    return q ? q.items.length - q.head : 0;
  }

  /** The runs with spooled events, by their oldest spooled event. */
  runs(): string[] {
    return [...this.byRun.entries()].sort((a, b) => a[1].items[a[1].head] - b[1].items[b[1].head]).map(([r]) => r);
  }

  /** The run's first `limit` spooled events, in spool (append) order. */
  eventsOf(runId: string, limit = Infinity): SpoolRecord[] {
    const q = this.byRun.get(runId);
    if (!q) return [];
    return q.items.slice(q.head, q.head + limit).map((n) => {
      const p = this.pending.get(n)!;
      return { n: p.n, event: p.event, json: p.json };
    });
  }

  /**
   * Spools events, in order, durably (written and fsynced) before resolving.
   * Throws SpoolFullError, spooling none of them, when they do not fit in
   * maxBytes.
   */
  async append(events: SpooledEvent[]): Promise<SpoolRecord[]> {
    this.checkOpen();
    const recs: SpoolRecord[] = [];
    const lines: Buffer[] = [];
    for (const e of events) {
      const r = { n: this.nextN++, event: e, json: JSON.stringify(e) };
      recs.push(r);
      lines.push(encodeJSON(`{"n":${r.n},"e":${r.json}}`));
    }
    const line = Buffer.concat(lines);
    if (this.bytes + this.reserved + line.length > this.maxBytes) {
      throw new SpoolFullError(
        `spool ${this.dir} is full: it holds ${this.bytes} bytes and ${this.size} undelivered events, ` +
          `${line.length} more bytes would pass maxSpoolBytes (${this.maxBytes}); nothing spooled before is lost: ` +
          `restore the API so the spool drains, or raise maxSpoolBytes`,
        { dir: this.dir, maxSpoolBytes: this.maxBytes },
      );
    }
    this.reserved += line.length;
    try {
      await this.enqueue({ line, events: recs });
    } finally {
      this.reserved -= line.length;
    }
    return recs;
  }

  /** Records durably that events were delivered. */
  async ack(ns: number[]): Promise<void> {
    if (ns.length === 0) return;
    this.checkOpen();
    await this.enqueue({ line: encode({ a: ns }), acks: ns });
  }

  /**
   * Keeps an event the API refused for good in rejected.ndjson (fsynced),
   * then acks it so the run's later events flow.
   */
  async reject(rec: SpoolRecord, error: unknown): Promise<void> {
    this.checkOpen();
    const file = join(this.dir, "rejected.ndjson");
    const fh = await open(file, "a", 0o600);
    try {
      const err = error instanceof Error ? { name: error.name, message: error.message, ...(error as object) } : error;
      await fh.write(JSON.stringify({ rejectedAt: new Date().toISOString(), n: rec.n, error: err, event: rec.event }) + "\n");
      await fh.sync();
    } finally {
      await fh.close();
    }
    await syncDir(this.dir);
    await this.ack([rec.n]);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    while (this.flushing) await this.flushing;
    this.closed = true;
    await this.fh?.close();
    this.fh = null;
    await this.unlock();
  }

  private checkOpen(): void {
    if (this.closed) throw new Error(`spool ${this.dir} is closed`);
  }

  // ---- writing: one write and one fsync for everything queued ----------

  private enqueue(w: Omit<Write, "resolve" | "reject">): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.queue.push({ ...w, resolve, reject });
      if (!this.flushing) {
        this.flushing = this.flushLoop().finally(() => (this.flushing = null));
      }
    });
  }

  private async flushLoop(): Promise<void> {
    while (this.queue.length > 0) {
      const batch = this.queue;
      this.queue = [];
      try {
        await this.writeDurably(Buffer.concat(batch.map((w) => w.line)));
      } catch (e) {
        for (const w of batch) w.reject(e);
        continue;
      }
      const seg = this.segments[this.segments.length - 1].index;
      for (const w of batch) {
        for (const r of w.events ?? []) this.addPending(r, seg);
        for (const n of w.acks ?? []) this.removePending(n);
      }
      try {
        await this.compact();
      } catch (e) {
        this.warn(`runstream spool: removing delivered segments of ${this.dir}: ${(e as Error).message}`);
      }
      for (const w of batch) w.resolve();
    }
  }

  private async writeDurably(data: Buffer): Promise<void> {
    let seg = this.segments[this.segments.length - 1];
    if (this.fh === null || seg === undefined || seg.bytes >= this.segmentBytes) {
      await this.fh?.close();
      this.fh = null;
      const index = this.nextSegment++;
      const file = join(this.dir, segmentName(index));
      this.fh = await open(file, "a", 0o600);
      await this.fh.sync();
      await syncDir(this.dir);
      seg = { index, file, bytes: 0, pending: 0 };
      this.segments.push(seg);
    }
    try {
      let off = 0;
      while (off < data.length) {
        const { bytesWritten } = await this.fh.write(data, off, data.length - off, null);
        off += bytesWritten;
      }
      await this.fh.sync();
    } catch (e) {
      // Nothing half-written stays behind a later record.
      await this.fh.truncate(seg.bytes).catch(() => undefined);
      throw e;
    }
    seg.bytes += data.length;
  }

  // compact deletes the oldest segments once everything in them was
  // delivered; when nothing is pending at all, every segment goes and the
  // next write starts a fresh one.
  private async compact(): Promise<void> {
    if (this.pending.size === 0) {
      if (this.segments.length === 0 || (this.segments.length === 1 && this.segments[0].bytes < this.segmentBytes >> 4)) return;
      await this.fh?.close();
      this.fh = null;
      // The next segment continues the numbering (nextSegment), so an old
      // file never comes back.
      for (const s of this.segments) await unlink(s.file);
      this.segments = [];
      await syncDir(this.dir);
      return;
    }
    let removed = false;
    while (this.segments.length > 1 && this.segments[0].pending === 0) {
      await unlink(this.segments[0].file);
      this.segments.shift();
      removed = true;
    }
    if (removed) await syncDir(this.dir);
  }

  private addPending(r: SpoolRecord, seg: number): void {
    this.pending.set(r.n, { ...r, seg });
    const s = this.segments.find((x) => x.index === seg);
    if (s) s.pending++;
    const q = this.byRun.get(r.event.runId);
    if (q) q.items.push(r.n);
    else this.byRun.set(r.event.runId, { items: [r.n], head: 0 });
  }

  private removePending(n: number): void {
    const p = this.pending.get(n);
    if (!p) return;
    this.pending.delete(n);
    const s = this.segments.find((x) => x.index === p.seg);
    if (s) s.pending--;
    const q = this.byRun.get(p.event.runId)!;
    if (q.items[q.head] === n) {
      q.head++;
      if (q.head > 1024 && q.head * 2 > q.items.length) {
        q.items = q.items.slice(q.head);
        q.head = 0;
      }
    } else {
      const i = q.items.indexOf(n, q.head);
      if (i >= 0) q.items.splice(i, 1);
    }
    if (q.head >= q.items.length) this.byRun.delete(p.event.runId);
  }

  // ---- replay --------------------------------------------------------------

  private async replay(): Promise<void> {
    const names = (await readdir(this.dir)).filter((n) => SEGMENT_RE.test(n)).sort();
    for (let i = 0; i < names.length; i++) {
      const file = join(this.dir, names[i]);
      const index = Number(SEGMENT_RE.exec(names[i])![1]);
      this.nextSegment = index + 1;
      const seg: Segment = { index, file, bytes: 0, pending: 0 };
      this.segments.push(seg);
      const data = await readFile(file);
      const isLast = i === names.length - 1;
      let off = 0;
      while (off < data.length) {
        const nl = data.indexOf(0x0a, off);
        const end = nl < 0 ? data.length : nl;
        const rec = decode(data.subarray(off, end));
        if (rec === null || nl < 0) {
          // Bad or unterminated. Only the very end of the last segment may be
          // torn by a crash: nothing was acknowledged after it.
          const rest = data.subarray(nl < 0 ? data.length : nl + 1);
          if (isLast && (nl < 0 || rest.length === 0)) {
            this.warn(
              `runstream spool: ${file}: cut a torn last record at byte offset ${off} (${data.length - off} bytes a crash interrupted; it was never acknowledged)`,
            );
            const fh = await open(file, "r+");
            try {
              await fh.truncate(off);
              await fh.sync();
            } finally {
              await fh.close();
            }
            break;
          }
          throw new SpoolCorruptError(
            `spool file ${file} holds a corrupt record at byte offset ${off} (${rec === null ? "checksum mismatch or unparsable" : "unterminated"}), ` +
              `before its last record; nothing was deleted: move ${this.dir} aside for inspection and start with an empty spoolDir`,
            { file, offset: off },
          );
        }
        if ("e" in rec) {
          this.addPending({ n: rec.n, event: rec.e, json: JSON.stringify(rec.e) }, index);
          this.nextN = Math.max(this.nextN, rec.n + 1);
        } else {
          for (const n of rec.a) {
            this.removePending(n);
            this.nextN = Math.max(this.nextN, n + 1);
          }
        }
        off = end + 1;
      }
      seg.bytes = Math.min(off, data.length);
    }
    if (this.segments.length > 0) {
      const last = this.segments[this.segments.length - 1];
      this.fh = await open(last.file, "a");
    }
  }

  // ---- the lock ------------------------------------------------------------

  private async lock(): Promise<void> {
    const file = join(this.dir, "LOCK");
    for (let tries = 0; tries < 5; tries++) {
      // The lock appears whole or not at all: written aside, then linked
      // (link refuses to replace an existing LOCK).
      const mine = join(this.dir, `LOCK.new.${this.lockToken.split(":")[2]}`);
      const fh = await open(mine, "w", 0o600);
      try {
        await fh.write(this.lockToken + "\n");
        await fh.sync();
      } finally {
        await fh.close();
      }
      try {
        await link(mine, file);
        await unlink(mine);
        await syncDir(this.dir);
        return;
      } catch (e) {
        await unlink(mine);
        if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw e;
      }
      let holder = "";
      try {
        holder = (await readFile(file, "utf8")).trim();
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code === "ENOENT") continue;
        throw e;
      }
      const [pid, host] = holder.split(":");
      if (host !== hostname() || alive(Number(pid))) {
        throw new SpoolLockedError(
          `spool directory ${this.dir} is in use by process ${pid} on ${host} (${file}); each client needs a spoolDir of its own`,
          { dir: this.dir },
        );
      }
      // The holder died. Move its lock
      // aside under a name of ours, then make sure it was the dead one we
      // moved, not a lock another process took meanwhile.
      const aside = join(this.dir, `LOCK.stale.${this.lockToken.split(":")[2]}`);
      try {
        await rename(file, aside);
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code === "ENOENT") continue;
        throw e;
      }
      const moved = (await readFile(aside, "utf8")).trim();
      if (moved !== holder) {
        await link(aside, file).catch(() => undefined);
        await unlink(aside);
        continue;
      }
      this.warn(`runstream spool: ${this.dir}: took over the lock of process ${pid}, which is gone`);
      await unlink(aside);
    }
    throw new SpoolLockedError(`spool directory ${this.dir}: could not take its lock (${file})`, { dir: this.dir });
  }

  private async unlock(): Promise<void> {
    const file = join(this.dir, "LOCK");
    try {
      if ((await readFile(file, "utf8")).trim() === this.lockToken) await rm(file);
    } catch {
      // already gone
    }
  }
}

function segmentName(index: number): string {
  return `seg-${String(index).padStart(12, "0")}.log`;
}

function encode(obj: unknown): Buffer {
  return encodeJSON(JSON.stringify(obj));
}

function encodeJSON(json: string): Buffer {
  return Buffer.from(`${checksum(json)} ${json}\n`, "utf8");
}

function checksum(json: string): string {
  return createHash("sha256").update(json, "utf8").digest("hex").slice(0, 8);
}

type Decoded = { n: number; e: SpooledEvent } | { a: number[] };

function decode(line: Buffer): Decoded | null {
  if (line.length < 10 || line[8] !== 0x20) return null;
  const json = line.subarray(9).toString("utf8");
  if (checksum(json) !== line.subarray(0, 8).toString("latin1")) return null;
  try {
    const v = JSON.parse(json) as Record<string, unknown>;
    if (Number.isInteger(v.n) && typeof v.e === "object" && v.e !== null && typeof (v.e as SpooledEvent).runId === "string") {
      return { n: v.n as number, e: v.e as SpooledEvent };
    }
    if (Array.isArray(v.a) && v.a.every((n) => Number.isInteger(n))) return { a: v.a as number[] };
  } catch {
    // falls through
  }
  return null;
}

function alive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === "EPERM";
  }
}

async function syncDir(dir: string): Promise<void> {
  const fh = await open(dir, "r");
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}

/** For tests and tools: the spool's files and their sizes. */
export async function spoolFiles(dir: string): Promise<{ name: string; bytes: number }[]> {
  const out: { name: string; bytes: number }[] = [];
  for (const name of (await readdir(dir)).sort()) out.push({ name, bytes: (await stat(join(dir, name))).size });
  return out;
}
