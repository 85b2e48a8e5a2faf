// The durable local spool of fail-open events: past the write-latency
// budget, a FailOpen event type is kept here and sent later, in order.
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
// order and so per-run order. Only a torn tail of the last segment (bytes
// after its last newline: a write a crash cut short, never acknowledged) is
// cut, with a warning; a record that fails its checksum or does not parse,
// wherever it is (the last one included), is a SpoolCorruptError naming the
// file and offset, and nothing is deleted or rewritten. Segments are deleted
// only once every event in them, and in every older segment, was delivered.
//
// Memory: events stay on disk. The spool keeps, per pending event, where its
// record is (20 bytes in blocks of typed arrays, a block freed once none of
// its events is pending), and per run with pending events its id and three
// numbers; eventsOf reads a run's records from disk when they are
// delivered, at most about 1 MiB at a time. Replay reads the segments in
// 1 MiB chunks.
//
// Trust: the directory is created 0700 and must stay this user's own: a
// symbolic link, a directory owned by another user or writable by its group
// or by others is a SpoolUnsafeError before anything in it is read. Every
// file in it is opened with O_NOFOLLOW (O_NONBLOCK too, so a planted FIFO
// cannot hang the open) and must be a regular file of this user's, not
// writable by group or others (and, but for LOCK, which is made by link(),
// with one link). A spool holding more than maxBytes is a SpoolFullError
// before it is read.

import { createHash, hash as cryptoHash, randomBytes } from "node:crypto";
import { constants as fsc, type Stats } from "node:fs";
import { hostname } from "node:os";
import { link, lstat, mkdir, open, readdir, rename, unlink, type FileHandle } from "node:fs/promises";
import { dirname, join } from "node:path";

import { SpoolCorruptError, SpoolFullError, SpoolLockedError, SpoolUnsafeError } from "./errors.js";

/** An event as written to the spool: what append would have sent. */
export type SpooledEvent = Record<string, unknown> & { runId: string; eventType: string };

export interface SpoolRecord {
  n: number;
  event: SpooledEvent;
  /** The event's JSON, as append would have sent it. */
  json: string;
}

const SEGMENT_RE = /^seg-(\d{12})\.log$/;
const DEFAULT_SEGMENT_BYTES = 4 << 20;
/** A record longer than this is damage (an event is at most the API's body limit, 1 MiB by default). */
export const MAX_RECORD_BYTES = 64 << 20;
/**
 * The room an event keeps in maxBytes for its share of an ack record: an ack
 * of one event is at most 8 + 1 + 6 + 16 + 2 + 1 bytes ("<sum> {"a":[N]}\n");
 * one of more events costs each less.
 */
const ACK_RESERVE = 40;
/** Replay reads segments this much at a time. */
const READ_CHUNK = 1 << 20;
/** eventsOf returns at most about this many bytes of records (at least one record). */
const EVENTS_OF_BYTES = 1 << 20;
/** eventsOf reads records at most READ_GAP apart with one read of at most READ_SPAN, READERS reads at a time. */
const READ_GAP = 16 << 10;
const READ_SPAN = 256 << 10;
const READERS = 4;

// Opened files never follow a symbolic link, and a FIFO never blocks the
// open (O_NONBLOCK changes nothing for a regular file).
const O_NOFOLLOW = fsc.O_NOFOLLOW ?? 0;
const O_NONBLOCK = fsc.O_NONBLOCK ?? 0;
const O_DIRECTORY = fsc.O_DIRECTORY ?? 0;
const { O_RDONLY, O_WRONLY, O_RDWR, O_CREAT, O_EXCL, O_APPEND } = fsc;

interface Segment {
  index: number;
  file: string;
  /** Where the segment starts in the spool's byte positions (segments follow each other). */
  start: number;
  bytes: number;
  pending: number; // events in it not yet delivered
}

interface Write {
  /** One record a line; for an append, lines[i] is events[i]'s. */
  lines: Buffer[];
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
  private end = 0; // the position after the last segment
  private nextN = 1;
  private nextSegment = 1;
  private reserved = 0; // bytes of events accepted and not yet written
  private readonly index = new PendingIndex();
  private readonly readers = new ReadHandles(16);
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

  /**
   * Opens (creating it 0700 when absent) and locks the spool in dir, then
   * replays it. Rejects with SpoolUnsafeError for a directory or file another
   * user could have written, SpoolFullError when it holds more than maxBytes,
   * SpoolCorruptError, SpoolLockedError.
   */
  static async open(
    dir: string,
    opts: { maxBytes: number; warn: (msg: string) => void; segmentBytes?: number },
  ): Promise<Spool> {
    await prepareDir(dir);
    const s = new Spool(dir, opts.maxBytes, opts.warn, opts.segmentBytes ?? Math.min(DEFAULT_SEGMENT_BYTES, Math.max(4096, opts.maxBytes >> 2)));
    await s.lock();
    try {
      await s.replay();
    } catch (e) {
      await s.fh?.close().catch(() => undefined);
      s.fh = null;
      await s.unlock();
      throw e;
    }
    return s;
  }

  /** Bytes the spool's segments take on disk. */
  get bytes(): number {
    let b = 0;
    for (const s of this.segments) b += s.bytes;
    return b;
  }

  /** How many events are spooled and not yet delivered. */
  get size(): number {
    return this.index.count;
  }

  pendingFor(runId: string): number {
    return this.index.pendingFor(runId);
  }

  /** The runs with spooled events, by their oldest spooled event. */
  runs(): string[] {
    return this.index.runs();
  }

  /**
   * The run's first spooled events, in spool (append) order, read from disk:
   * at most `limit`, and at most about 1 MiB of them (at least one).
   */
  async eventsOf(runId: string, limit = Infinity): Promise<SpoolRecord[]> {
    const locs = this.index.walk(runId, limit, EVENTS_OF_BYTES);
    // Records close to each other are read with one read.
    const reads: { seg: Segment; off: number; end: number; locs: typeof locs }[] = [];
    for (const l of locs) {
      const seg = this.segmentAt(l.pos);
      if (seg === undefined) throw new Error(`spool ${this.dir}: event ${l.n} is in no segment (a bug)`);
      const off = l.pos - seg.start;
      const r = reads[reads.length - 1];
      if (r !== undefined && r.seg === seg && off >= r.end && off - r.end <= READ_GAP && off + l.len - r.off <= READ_SPAN) {
        r.end = off + l.len;
        r.locs.push(l);
      } else {
        reads.push({ seg, off, end: off + l.len, locs: [l] });
      }
    }
    const data: Buffer[] = new Array(reads.length);
    let next = 0;
    const reader = async () => {
      for (let k = next++; k < reads.length; k = next++) {
        const r = reads[k];
        const h = this.readers.acquire(r.seg.index, () => this.openFile(segmentName(r.seg.index), O_RDONLY));
        try {
          data[k] = await readAt(await h.fh, r.off, r.end - r.off);
        } finally {
          this.readers.release(h);
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(READERS, reads.length) }, reader));
    const out: SpoolRecord[] = [];
    reads.forEach((r, k) => {
      for (const l of r.locs) {
        const off = l.pos - r.seg.start;
        const line = data[k].subarray(off - r.off, off - r.off + l.len);
        const rec = line.length === l.len && line[l.len - 1] === 0x0a ? decode(line.subarray(0, l.len - 1)) : null;
        if (rec === null || !("e" in rec) || rec.n !== l.n || rec.e.runId !== runId) {
          throw this.corrupt(r.seg.file, off, `the record of event ${l.n} (run ${runId}) changed after the spool was opened`);
        }
        out.push({ n: rec.n, event: rec.e, json: rec.json });
      }
    });
    return out;
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
    let bytes = 0;
    for (const e of events) {
      const json = JSON.stringify(e);
      const line = encodeJSON(`{"n":${this.nextN},"e":${json}}`);
      if (line.length > MAX_RECORD_BYTES) {
        throw new RangeError(
          `event ${String(e.eventId)} of run ${e.runId} takes ${line.length} bytes, more than a spool record may (${MAX_RECORD_BYTES}); the API refuses events that large too`,
        );
      }
      recs.push({ n: this.nextN++, event: e, json });
      lines.push(line);
      bytes += line.length;
    }
    // Each event keeps room for the record of its delivery, so that acks,
    // written past a full spool to free it, never take the files over the
    // cap (which a reopen would refuse).
    const need = bytes + events.length * ACK_RESERVE;
    if (this.bytes + this.index.count * ACK_RESERVE + this.reserved + need > this.maxBytes) {
      throw new SpoolFullError(
        `spool ${this.dir} is full: it holds ${this.bytes} bytes and ${this.size} undelivered events, ` +
          `${need} more bytes would pass maxSpoolBytes (${this.maxBytes}); nothing spooled before is lost: ` +
          `restore the API so the spool drains, or raise maxSpoolBytes`,
        { dir: this.dir, maxSpoolBytes: this.maxBytes },
      );
    }
    this.reserved += need;
    try {
      await this.enqueue({ lines, events: recs });
    } finally {
      this.reserved -= need;
    }
    return recs;
  }

  /** Records durably that events were delivered. */
  async ack(ns: number[]): Promise<void> {
    if (ns.length === 0) return;
    this.checkOpen();
    await this.enqueue({ lines: [encode({ a: ns })], acks: ns });
  }

  /**
   * Keeps an event the API refused for good in rejected.ndjson (fsynced),
   * then acks it so the run's later events flow.
   */
  async reject(rec: SpoolRecord, error: unknown): Promise<void> {
    this.checkOpen();
    const fh = await this.openFile("rejected.ndjson", O_WRONLY | O_CREAT | O_APPEND);
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
    await this.readers.closeAll();
    await this.unlock();
  }

  private checkOpen(): void {
    if (this.closed) throw new Error(`spool ${this.dir} is closed`);
  }

  private corrupt(file: string, offset: number, what: string): SpoolCorruptError {
    return new SpoolCorruptError(
      `spool file ${file} holds a corrupt record at byte offset ${offset} (${what}); ` +
        `nothing was deleted: move ${this.dir} aside for inspection and start with an empty spoolDir`,
      { file, offset },
    );
  }

  /**
   * Opens name in the spool without following a symbolic link, and refuses
   * anything but a regular file of this user's, not writable by others, with
   * at most `links` links.
   */
  private async openFile(name: string, flags: number, links = 1): Promise<FileHandle> {
    const file = join(this.dir, name);
    let fh: FileHandle;
    try {
      fh = await open(file, flags | O_NOFOLLOW | O_NONBLOCK, 0o600);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === "ELOOP") {
        throw new SpoolUnsafeError(
          `spool file ${file} is a symbolic link; nothing was read or written through it: remove it after inspecting it, or choose another spoolDir`,
          { path: file },
        );
      }
      throw e;
    }
    try {
      const st = await fh.stat();
      if (!st.isFile()) throw notRegular(file, "not a regular file");
      checkOwned(file, st, "file");
      if (st.nlink > links) {
        throw new SpoolUnsafeError(
          `spool file ${file} has ${st.nlink} hard links, so it may be another file's too; nothing was read or written: remove it after inspecting it, or choose another spoolDir`,
          { path: file },
        );
      }
    } catch (e) {
      await fh.close();
      throw e;
    }
    return fh;
  }

  /** The segment holding position pos: the last one starting at or before it. */
  private segmentAt(pos: number): Segment | undefined {
    const segs = this.segments;
    let lo = 0;
    let hi = segs.length - 1;
    let found: Segment | undefined;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      if (segs[mid].start <= pos) {
        found = segs[mid];
        lo = mid + 1;
      } else {
        hi = mid - 1;
      }
    }
    return found;
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
      let pos: number;
      try {
        pos = await this.writeDurably(Buffer.concat(batch.flatMap((w) => w.lines)));
      } catch (e) {
        for (const w of batch) w.reject(e);
        continue;
      }
      for (const w of batch) {
        w.lines.forEach((line, i) => {
          const r = w.events?.[i];
          if (r) this.addPending(r.n, r.event.runId, pos, line.length);
          pos += line.length;
        });
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

  /** Appends data to the last segment (a new one when it is full) and fsyncs it; returns where data starts. */
  private async writeDurably(data: Buffer): Promise<number> {
    let seg = this.segments[this.segments.length - 1];
    if (this.fh === null || seg === undefined || seg.bytes >= this.segmentBytes) {
      await this.fh?.close();
      this.fh = null;
      const index = this.nextSegment++;
      const name = segmentName(index);
      this.fh = await this.openFile(name, O_WRONLY | O_APPEND | O_CREAT | O_EXCL);
      await this.fh.sync();
      await syncDir(this.dir);
      seg = { index, file: join(this.dir, name), start: this.end, bytes: 0, pending: 0 };
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
    const pos = seg.start + seg.bytes;
    seg.bytes += data.length;
    this.end = seg.start + seg.bytes;
    return pos;
  }

  // compact deletes the oldest segments once everything in them was
  // delivered; when nothing is pending at all, every segment goes and the
  // next write starts a fresh one.
  private async compact(): Promise<void> {
    if (this.index.count === 0) {
      if (this.segments.length === 0 || (this.segments.length === 1 && this.segments[0].bytes < this.segmentBytes >> 4)) return;
      await this.fh?.close();
      this.fh = null;
      // The next segment continues the numbering (nextSegment), so an old
      // file never comes back.
      for (const s of this.segments) {
        await this.readers.drop(s.index);
        await unlink(s.file);
      }
      this.segments = [];
      await syncDir(this.dir);
      return;
    }
    let removed = false;
    while (this.segments.length > 1 && this.segments[0].pending === 0) {
      await this.readers.drop(this.segments[0].index);
      await unlink(this.segments[0].file);
      this.segments.shift();
      removed = true;
    }
    if (removed) await syncDir(this.dir);
  }

  private addPending(n: number, runId: string, pos: number, len: number): void {
    this.index.add(n, runId, pos, len);
    const s = this.segmentAt(pos);
    if (s) s.pending++;
  }

  private removePending(n: number): void {
    const pos = this.index.remove(n);
    if (pos < 0) return;
    const s = this.segmentAt(pos);
    if (s) s.pending--;
  }

  // ---- replay --------------------------------------------------------------

  private async replay(): Promise<void> {
    const names: string[] = [];
    let total = 0;
    for (const name of await readdir(this.dir)) {
      if (!SEGMENT_RE.test(name)) continue;
      const file = join(this.dir, name);
      const st = await lstat(file);
      if (!st.isFile()) throw notRegular(file, st.isSymbolicLink() ? "a symbolic link" : "not a regular file");
      total += st.size;
      names.push(name);
    }
    if (total > this.maxBytes) {
      throw new SpoolFullError(
        `spool ${this.dir} holds ${total} bytes of segments, more than maxSpoolBytes (${this.maxBytes}); it was written with a larger maxSpoolBytes ` +
          `(or files were added to it), and nothing of it was read: set maxSpoolBytes to at least ${total} so that it is delivered, or move the directory aside`,
        { dir: this.dir, maxSpoolBytes: this.maxBytes },
      );
    }
    names.sort();
    const buf = Buffer.allocUnsafe(READ_CHUNK); // one for every segment: each its own would wait for a GC
    for (let i = 0; i < names.length; i++) {
      const index = Number(SEGMENT_RE.exec(names[i])![1]);
      this.nextSegment = index + 1;
      const seg: Segment = { index, file: join(this.dir, names[i]), start: this.end, bytes: 0, pending: 0 };
      this.segments.push(seg);
      const isLast = i === names.length - 1;
      const fh = await this.openFile(names[i], isLast ? O_RDWR : O_RDONLY);
      try {
        seg.bytes = await this.replaySegment(fh, seg, isLast, buf);
      } finally {
        await fh.close();
      }
      this.end = seg.start + seg.bytes;
    }
    if (this.segments.length > 0) {
      const last = this.segments[this.segments.length - 1];
      this.fh = await this.openFile(segmentName(last.index), O_WRONLY | O_APPEND);
    }
  }

  /** Reads one segment's records in chunks; returns its size once a torn tail is cut. */
  private async replaySegment(fh: FileHandle, seg: Segment, isLast: boolean, buf: Buffer): Promise<number> {
    const size = (await fh.stat()).size;
    let partial: Buffer[] = []; // the start of the line that continues in the next chunk
    let partialLen = 0;
    let lineStart = 0; // where the current line starts in the file
    let pos = 0;
    while (pos < size) {
      const { bytesRead } = await fh.read(buf, 0, Math.min(buf.length, size - pos), pos);
      if (bytesRead === 0) break;
      const chunk = buf.subarray(0, bytesRead);
      let i = 0;
      for (;;) {
        const nl = chunk.indexOf(0x0a, i);
        if (nl < 0) {
          partialLen += bytesRead - i;
          // No record, and so no torn tail (a part of one), is this long.
          if (partialLen > MAX_RECORD_BYTES) throw this.corrupt(seg.file, lineStart, `${partialLen} bytes and no end of record: more than a record may hold (${MAX_RECORD_BYTES})`);
          partial.push(Buffer.from(chunk.subarray(i)));
          break;
        }
        const line = partialLen === 0 ? chunk.subarray(i, nl) : Buffer.concat([...partial, chunk.subarray(i, nl)]);
        this.replayRecord(line, seg, lineStart);
        partial = [];
        partialLen = 0;
        lineStart = pos + nl + 1;
        i = nl + 1;
      }
      pos += bytesRead;
    }
    if (lineStart >= size) return size;
    // Bytes after the last newline: a write a crash cut short. Only the last
    // segment may end so: a segment is closed for the next only after its
    // writes returned.
    if (!isLast) throw this.corrupt(seg.file, lineStart, "an unterminated record at the end of a segment that is not the last");
    this.warn(
      `runstream spool: ${seg.file}: cut a torn last record at byte offset ${lineStart} (${size - lineStart} bytes without their newline: a write a crash interrupted; it was never acknowledged)`,
    );
    await fh.truncate(lineStart);
    await fh.sync();
    return lineStart;
  }

  private replayRecord(line: Buffer, seg: Segment, off: number): void {
    const rec = decode(line);
    if (rec === null) throw this.corrupt(seg.file, off, "checksum mismatch or unparsable");
    if ("e" in rec) {
      // Numbers grow with every event (a failed write leaves a gap).
      if (rec.n < this.nextN) throw this.corrupt(seg.file, off, `event number ${rec.n} does not follow ${this.nextN - 1}`);
      this.addPending(rec.n, rec.e.runId, seg.start + off, line.length + 1);
      this.nextN = rec.n + 1;
    } else {
      for (const n of rec.a) {
        this.removePending(n);
        this.nextN = Math.max(this.nextN, n + 1);
      }
    }
  }

  // ---- the lock ------------------------------------------------------------

  private async lock(): Promise<void> {
    const file = join(this.dir, "LOCK");
    const suffix = this.lockToken.split(":")[2];
    for (let tries = 0; tries < 5; tries++) {
      // The lock appears whole or not at all: written aside, then linked
      // (link refuses to replace an existing LOCK, symbolic link or not).
      const mine = `LOCK.new.${suffix}`;
      const fh = await this.openFile(mine, O_WRONLY | O_CREAT | O_EXCL);
      try {
        await fh.write(this.lockToken + "\n");
        await fh.sync();
      } finally {
        await fh.close();
      }
      try {
        await link(join(this.dir, mine), file);
        await unlink(join(this.dir, mine));
        await syncDir(this.dir);
        return;
      } catch (e) {
        await unlink(join(this.dir, mine));
        if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw e;
      }
      let holder = "";
      try {
        holder = await this.readLock("LOCK");
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
      const aside = `LOCK.stale.${suffix}`;
      try {
        await rename(file, join(this.dir, aside));
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code === "ENOENT") continue;
        throw e;
      }
      const moved = await this.readLock(aside);
      if (moved !== holder) {
        await link(join(this.dir, aside), file).catch(() => undefined);
        await unlink(join(this.dir, aside));
        continue;
      }
      this.warn(`runstream spool: ${this.dir}: took over the lock of process ${pid}, which is gone`);
      await unlink(join(this.dir, aside));
    }
    throw new SpoolLockedError(`spool directory ${this.dir}: could not take its lock (${file})`, { dir: this.dir });
  }

  /** Reads a lock file's holder (without following a symbolic link). */
  private async readLock(name: string): Promise<string> {
    // Two links while a holder is between its link() and unlink().
    const fh = await this.openFile(name, O_RDONLY, 2);
    try {
      const buf = Buffer.alloc(256);
      const { bytesRead } = await fh.read(buf, 0, buf.length, 0);
      return buf.subarray(0, bytesRead).toString("utf8").trim();
    } finally {
      await fh.close();
    }
  }

  private async unlock(): Promise<void> {
    try {
      if ((await this.readLock("LOCK")) === this.lockToken) await unlink(join(this.dir, "LOCK"));
    } catch {
      // already gone
    }
  }
}

/**
 * The spool's pending events, by number: where each one's record is (a
 * position in the spool and a length; length 0 once delivered), its run,
 * and the next event of its run (runs are chains through the events). Kept
 * in blocks of typed arrays, BLOCK numbers each, so that growing never
 * copies, and a block is freed as soon as no event of it is live: pending,
 * or delivered out of its run's order and still linked from the run's
 * earlier events.
 */
const BLOCK_SHIFT = 13;
const BLOCK = 1 << BLOCK_SHIFT;

interface Block {
  pos: Float64Array;
  len: Uint32Array;
  next: Uint32Array; // distance to the run's next event; 0: none
  run: Uint32Array;
  live: number;
}

class PendingIndex {
  count = 0;
  private blocks = new Map<number, Block>();
  // The runs with pending events: slot by id, and per slot its first
  // pending event, its last event and how many it has pending.
  private slots = new Map<string, number>();
  private ids: string[] = [];
  private head: number[] = [];
  private tail: number[] = [];
  private pend: number[] = [];
  private free: number[] = [];
  private last = 0;

  add(n: number, runId: string, pos: number, len: number): void {
    if (n <= this.last) throw new Error(`spool index: event ${n} added after ${this.last} (a bug)`);
    this.last = n;
    const b = this.blockOf(n, true)!;
    const i = n & (BLOCK - 1);
    b.pos[i] = pos;
    b.len[i] = len;
    b.next[i] = 0;
    b.live++;
    let s = this.slots.get(runId);
    if (s === undefined) {
      s = this.free.pop() ?? this.ids.length;
      this.slots.set(runId, s);
      this.ids[s] = runId;
      this.head[s] = n;
      this.pend[s] = 0;
    } else {
      const t = this.tail[s];
      this.blockOf(t)!.next[t & (BLOCK - 1)] = n - t;
    }
    b.run[i] = s;
    this.tail[s] = n;
    this.pend[s]++;
    this.count++;
  }

  /** Marks event n delivered; returns its position, or -1 when it was not pending. */
  remove(n: number): number {
    const b = this.blockOf(n);
    const i = n & (BLOCK - 1);
    if (b === undefined || b.len[i] === 0) return -1;
    const pos = b.pos[i];
    b.len[i] = 0;
    this.count--;
    const s = b.run[i];
    this.pend[s]--;
    if (this.pend[s] === 0) {
      // Its last pending event: release the whole chain.
      for (let h = this.head[s]; h !== 0; ) h = this.release(h);
      this.slots.delete(this.ids[s]);
      this.ids[s] = "";
      this.free.push(s);
    } else if (this.head[s] === n) {
      let h = this.release(n);
      while (this.len(h) === 0) h = this.release(h);
      this.head[s] = h;
    }
    // Else delivered out of order: it stays linked until the run's head passes it.
    return pos;
  }

  pendingFor(runId: string): number {
    const s = this.slots.get(runId);
    return s === undefined ? 0 : this.pend[s];
  }

  runs(): string[] {
    return [...this.slots.entries()].sort((a, b) => this.head[a[1]] - this.head[b[1]]).map(([r]) => r);
  }

  /** The run's first pending events: at most limit, and at most maxBytes of records (at least one). */
  walk(runId: string, limit: number, maxBytes: number): { n: number; pos: number; len: number }[] {
    const s = this.slots.get(runId);
    const out: { n: number; pos: number; len: number }[] = [];
    if (s === undefined) return out;
    let bytes = 0;
    for (let n = this.head[s]; n !== 0 && out.length < limit; ) {
      const b = this.blockOf(n)!;
      const i = n & (BLOCK - 1);
      if (b.len[i] > 0) {
        if (out.length > 0 && bytes + b.len[i] > maxBytes) break;
        out.push({ n, pos: b.pos[i], len: b.len[i] });
        bytes += b.len[i];
      }
      n = b.next[i] === 0 ? 0 : n + b.next[i];
    }
    return out;
  }

  private len(n: number): number {
    return this.blockOf(n)!.len[n & (BLOCK - 1)];
  }

  /** Unlinks event n from its block (freed when nothing in it is live); returns the run's next event, or 0. */
  private release(n: number): number {
    const k = Math.floor(n / BLOCK);
    const b = this.blocks.get(k)!;
    const d = b.next[n & (BLOCK - 1)];
    if (--b.live === 0) this.blocks.delete(k);
    return d === 0 ? 0 : n + d;
  }

  private blockOf(n: number, create = false): Block | undefined {
    const k = Math.floor(n / BLOCK);
    let b = this.blocks.get(k);
    if (b === undefined && create) {
      b = { pos: new Float64Array(BLOCK), len: new Uint32Array(BLOCK), next: new Uint32Array(BLOCK), run: new Uint32Array(BLOCK), live: 0 };
      this.blocks.set(k, b);
    }
    return b;
  }
}

/**
 * Open read handles of segments, at most max of them not in use, the least
 * recently used closed first; a handle in use is closed once released.
 */
interface ReadHandle {
  key: number;
  fh: Promise<FileHandle>;
  users: number;
  dropped: boolean;
}

class ReadHandles {
  private readonly open = new Map<number, ReadHandle>(); // in order of use
  constructor(private readonly max: number) {}

  acquire(key: number, opener: () => Promise<FileHandle>): ReadHandle {
    let h = this.open.get(key);
    if (h !== undefined) {
      this.open.delete(key);
    } else {
      h = { key, fh: opener(), users: 0, dropped: false };
      const failed = h;
      h.fh.catch(() => void this.drop(failed.key, failed));
    }
    this.open.set(key, h);
    h.users++;
    for (const [k, old] of this.open) {
      if (this.open.size <= this.max) break;
      if (old.users === 0) void this.drop(k, old);
    }
    return h;
  }

  release(h: ReadHandle): void {
    if (--h.users === 0 && h.dropped) void h.fh.then((fh) => fh.close()).catch(() => undefined);
  }

  /** Closes key's handle (now, or when its last user releases it). */
  drop(key: number, h = this.open.get(key)): Promise<void> {
    if (h === undefined || h.dropped) return Promise.resolve();
    h.dropped = true;
    if (this.open.get(key) === h) this.open.delete(key);
    return h.users === 0 ? h.fh.then((fh) => fh.close()).catch(() => undefined) : Promise.resolve();
  }

  async closeAll(): Promise<void> {
    await Promise.all([...this.open.values()].map((h) => this.drop(h.key, h)));
  }
}

/** Creates dir 0700 when it is absent, and refuses one another local user could write in or redirect. */
async function prepareDir(dir: string): Promise<void> {
  let st: Stats | null = await lstat(dir).catch((e: NodeJS.ErrnoException) => {
    if (e.code === "ENOENT") return null;
    throw e;
  });
  if (st === null) {
    await mkdir(dirname(dir), { recursive: true, mode: 0o700 });
    await mkdir(dir, { mode: 0o700 }).catch((e: NodeJS.ErrnoException) => {
      if (e.code !== "EEXIST") throw e;
    });
    st = await lstat(dir);
  }
  if (st.isSymbolicLink()) {
    throw new SpoolUnsafeError(
      `spool directory ${dir} is a symbolic link, which whoever can write its parent could point elsewhere; set spoolDir to a real directory of this user's`,
      { path: dir },
    );
  }
  if (!st.isDirectory()) {
    throw new SpoolUnsafeError(`spool directory ${dir} is not a directory; set spoolDir to a directory of this user's`, { path: dir });
  }
  checkOwned(dir, st, "directory");
}

/** Refuses st (of path) unless it is this process's user's and not writable by its group or others. */
function checkOwned(path: string, st: Stats, what: "directory" | "file"): void {
  const euid = process.geteuid?.();
  if (euid === undefined) return; // not a POSIX system
  if (st.uid !== euid) {
    const fix =
      what === "directory"
        ? `give it to this user (chown ${euid} ${path}) if it is yours, or choose another spoolDir`
        : "remove it after inspecting it (someone else may have written it), or choose another spoolDir";
    throw new SpoolUnsafeError(
      `spool ${what} ${path} is owned by uid ${st.uid}, not by this process's user (uid ${euid}), so that user could change what is delivered with this token; ${fix}`,
      { path },
    );
  }
  if ((st.mode & 0o022) !== 0) {
    const fix =
      what === "directory"
        ? `chmod 0700 ${path} after checking that no one else wrote in it, or choose another spoolDir`
        : "remove it after inspecting it, or choose another spoolDir";
    throw new SpoolUnsafeError(
      `spool ${what} ${path} is writable by its group or by others (mode ${(st.mode & 0o7777).toString(8).padStart(4, "0")}), so another user could plant or change events there; ${fix}`,
      { path },
    );
  }
}

function notRegular(file: string, what: string): SpoolUnsafeError {
  return new SpoolUnsafeError(
    `spool file ${file} is ${what}; nothing was read or written through it: remove it after inspecting it, or choose another spoolDir`,
    { path: file },
  );
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

/** For tests and tools: the line of event number n, its JSON given, as append writes it. */
export function encodeEventRecord(n: number, json: string): Buffer {
  return encodeJSON(`{"n":${n},"e":${json}}`);
}

/** For tests and tools: the line of an ack of events ns, as ack writes it. */
export function encodeAckRecord(ns: number[]): Buffer {
  return encode({ a: ns });
}

// crypto.hash (Node 20.12+) makes no Hash object a record.
const sha256hex: (data: string | Buffer) => string =
  typeof (cryptoHash as unknown) === "function"
    ? (data) => cryptoHash("sha256", data, "hex")
    : (data) => createHash("sha256").update(data).digest("hex");

/** The first 8 hex digits of the SHA-256 of the JSON's UTF-8 bytes. */
function checksum(json: string | Buffer): string {
  return sha256hex(json).slice(0, 8);
}

type Decoded = { n: number; e: SpooledEvent; json: string } | { a: number[] };

function decode(line: Buffer): Decoded | null {
  if (line.length < 10 || line[8] !== 0x20) return null;
  const body = line.subarray(9);
  if (checksum(body) !== line.subarray(0, 8).toString("latin1")) return null;
  const text = body.toString("utf8");
  try {
    const v = JSON.parse(text) as Record<string, unknown>;
    if (Number.isSafeInteger(v.n) && (v.n as number) > 0 && typeof v.e === "object" && v.e !== null && !Array.isArray(v.e) && typeof (v.e as SpooledEvent).runId === "string") {
      // The event's JSON as append wrote it, without encoding it again.
      const prefix = `{"n":${v.n as number},"e":`;
      const json = text.startsWith(prefix) && text.endsWith("}") ? text.slice(prefix.length, -1) : JSON.stringify(v.e);
      return { n: v.n as number, e: v.e as SpooledEvent, json };
    }
    if (Array.isArray(v.a) && v.a.every((n) => Number.isSafeInteger(n))) return { a: v.a as number[] };
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

/** Reads len bytes at off (fewer at the end of the file). */
async function readAt(fh: FileHandle, off: number, len: number): Promise<Buffer> {
  const buf = Buffer.allocUnsafe(len);
  let got = 0;
  while (got < len) {
    const { bytesRead } = await fh.read(buf, got, len - got, off + got);
    if (bytesRead === 0) break;
    got += bytesRead;
  }
  return buf.subarray(0, got);
}

async function syncDir(dir: string): Promise<void> {
  const fh = await open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}

/** For tests and tools: the spool's files and their sizes. */
export async function spoolFiles(dir: string): Promise<{ name: string; bytes: number }[]> {
  const out: { name: string; bytes: number }[] = [];
  for (const name of (await readdir(dir)).sort()) out.push({ name, bytes: (await lstat(join(dir, name))).size });
  return out;
}
