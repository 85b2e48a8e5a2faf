package snapshots

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/runstream/runstream/store"
)

// DefaultTTL is the default snapshot retention (--snapshot-ttl): how long
// a terminal run stays in Redis after its terminal event.
const DefaultTTL = 24 * time.Hour

// Mode is how a [Write] is guarded on the watermark Redis holds.
type Mode uint8

const (
	// ModeCAS writes only when the stored watermark is Write.Expected
	// (-1: no snapshot): the projector's writes, reduced from what it
	// read.
	ModeCAS Mode = iota
	// ModeMax writes when the stored watermark is below the new one, or
	// equal and the stored snapshot is stale: [Rebuild], and the projector
	// over a snapshot it could not decode.
	ModeMax
	// ModeMaxEq writes when the stored watermark is below or equal to the
	// new one: [Resync], which repairs a snapshot corrupted in place.
	ModeMaxEq
)

// String is the mode as the write script takes it.
func (m Mode) String() string {
	switch m {
	case ModeMax:
		return "max"
	case ModeMaxEq:
		return "max_eq"
	}
	return "cas"
}

// Write is one guarded snapshot write.
type Write struct {
	Snapshot store.RunSnapshot
	// Expected is the stored watermark a ModeCAS write is guarded on; -1
	// means no snapshot yet.
	Expected int64
	Mode     Mode
	// TTL is the snapshot retention (--snapshot-ttl): a terminal snapshot
	// is written to expire TTL after its terminalAt ([ExpireAt]); 0 keeps
	// every snapshot.
	TTL time.Duration
	// Encoding is how the snapshot is stored (--snapshot-encoding).
	Encoding Encoding
}

// Policy is how a writer keeps snapshots: their retention and encoding
// (--snapshot-ttl, --snapshot-encoding).
type Policy struct {
	TTL      time.Duration
	Encoding Encoding
}

// Result is what happened to one [Write].
type Result struct {
	Written bool
	// Expired: the snapshot is of a run whose retention had already
	// ended when the write reached Redis, so nothing was written and any
	// snapshot Redis held of the run was deleted (a late event of a run
	// that expired never brings it back).
	Expired bool
	// Stored is the watermark Redis holds when the write lost its guard
	// (-1: no snapshot).
	Stored int64
}

// ExpireAt is when a snapshot leaves Redis under a retention of ttl, in
// unix milliseconds: ttl after its terminalAt (after its updatedAt for a
// terminal snapshot written before snapshots carried terminalAt, which is
// later, so such a run stays at least as long as it should). 0 means
// never: the run is open, or ttl is 0.
func ExpireAt(s *store.RunSnapshot, ttl time.Duration) int64 {
	if ttl <= 0 || !store.IsTerminalRunStatus(s.Status) {
		return 0
	}
	at := s.TerminalAt
	if at == "" {
		at = s.UpdatedAt
	}
	t, err := time.Parse(time.RFC3339Nano, at)
	if err != nil {
		return 0
	}
	return t.Add(ttl).UnixMilli()
}

// writeScript stores a snapshot when the stored watermark is the one the
// writer read (compare-and-set), so two projectors racing during a
// rebalance cannot both win, and a snapshot never moves backwards. It also
// publishes the change notification, atomically with the write.
//
// KEYS[1] snapshot key. ARGV[1] expected watermark (-1: no snapshot yet),
// ARGV[2] new snapshot JSON, ARGV[3] notification JSON, ARGV[4] mode: "cas"
// (exact match) or "max" (write when the stored watermark is below the new
// one, or equal and stale; rebuild uses it) or "max_eq" (below or equal;
// the operator's resync), ARGV[5] the new watermark, ARGV[6] the channel
// to publish on (UpdatesChannelOf: a script cannot ask for its database).
// ARGV[7] when the snapshot expires, unix milliseconds (0: never; see
// [ExpireAt]). Returns {1} when written, {0, stored watermark} when not,
// {2} when the snapshot had expired already.
//
// An expiring snapshot is set with PXAT, so Redis itself removes it on
// time: no process keeps a timer, and nothing scans the keyspace. One
// whose time has passed by Redis's own clock (the clock PXAT is judged
// by) is not written, and whatever Redis holds of the run goes: an older
// snapshot of a run that has since ended and expired (a replay of its
// events, a resync racing the expiry) must not stay, nor come back half
// built.
//
// The watermark is read with string.match rather than cjson.decode: the
// snapshot is our own JSON and lastEventSeq is always a plain integer, and
// matching is far cheaper than decoding a large snapshot on every write.
// A snapshot in the compressed encoding has both in its head line.
var writeScript = redis.NewScript(`
local exp = tonumber(ARGV[7])
if exp > 0 then
  local t = redis.call('TIME')
  if exp <= tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) then
    redis.call('DEL', KEYS[1])
    return {2}
  end
end
local cur = redis.call('GET', KEYS[1])
local seq, stale = -1, false
if cur then
  if string.sub(cur, 1, 5) == 'rsz1|' then
    local s, st = string.match(cur, '^rsz1|(%-?%d+)|([01])|')
    seq, stale = tonumber(s) or -1, st == '1'
  else
    seq = tonumber(string.match(cur, '"lastEventSeq":(%-?%d+)')) or -1
    stale = string.find(cur, '"stale":true', 1, true) ~= nil
  end
end
local ok
if ARGV[4] == 'max_eq' then
  ok = seq <= tonumber(ARGV[5])
elseif ARGV[4] == 'max' then
  local new = tonumber(ARGV[5])
  ok = seq < new or (seq == new and stale)
else
  ok = seq == tonumber(ARGV[1])
end
if not ok then
  return {0, seq}
end
if exp > 0 then
  redis.call('SET', KEYS[1], ARGV[2], 'PXAT', exp)
else
  redis.call('SET', KEYS[1], ARGV[2])
end
redis.call('PUBLISH', ARGV[6], ARGV[3])
return {1}
`)

// LoadScript loads the write script into Redis ahead of the first write;
// writes load it themselves when Redis does not know it.
func LoadScript(ctx context.Context, rdb redis.UniversalClient) error {
	return writeScript.Load(ctx, rdb).Err()
}

// WriteAll runs the guarded writes, and the catalog updates of their
// snapshots (the catalog script, which also moves each run in its
// tenant's [IndexKey] with ZADD GT, called once per tenant and up to 32
// runs), in one pipeline. On a cluster go-redis splits it by node. The results are in the order of ws.
// An error means Redis failed (some writes may have landed; each landed
// write is complete and guarded, so retrying is safe).
func WriteAll(ctx context.Context, rdb redis.UniversalClient, ws []Write) ([]Result, error) {
	if len(ws) == 0 {
		return nil, nil
	}
	res, err := runWrites(ctx, rdb, ws)
	if err != nil && strings.HasPrefix(err.Error(), "NOSCRIPT") {
		// Redis lost its scripts (a restart, a failover): both go together.
		if err := loadScripts(ctx, rdb); err != nil {
			return nil, err
		}
		res, err = runWrites(ctx, rdb, ws)
	}
	return res, err
}

// Encoding buffers: a new one of encodeChunk bytes when less than
// encodeReserve is left.
const (
	encodeChunk   = 1 << 20
	encodeReserve = 64 << 10
)

func runWrites(ctx context.Context, rdb redis.UniversalClient, ws []Write) ([]Result, error) {
	pipe := rdb.Pipeline()
	channel := UpdatesChannelOf(rdb)
	cmds := make([]*redis.Cmd, len(ws))
	catalog := newCatalogBatch()
	// The snapshots and notifications are encoded into large buffers, each
	// argument a slice of one, never overwritten before Exec sent it: a
	// buffer that grows moves to a new array and leaves the old one be.
	var buf []byte
	for i := range ws {
		w := &ws[i]
		if cap(buf)-len(buf) < encodeReserve {
			buf = make([]byte, 0, encodeChunk)
		}
		start := len(buf)
		buf = Append(buf, &w.Snapshot)
		body := buf[start:len(buf):len(buf)]
		if w.Encoding.compresses(&w.Snapshot) {
			start = len(buf)
			buf = appendCompressed(buf, &w.Snapshot, body)
			body = buf[start:len(buf):len(buf)]
		}
		start = len(buf)
		buf = NotificationOf(&w.Snapshot).Append(buf)
		note := buf[start:len(buf):len(buf)]
		exp := ExpireAt(&w.Snapshot, w.TTL)
		cmds[i] = evalWrite(ctx, pipe, channel, w.Snapshot.RunID, w.Expected, body, note, w.Mode, w.Snapshot.LastEventSeq, exp)
		catalog.add(ctx, pipe, &w.Snapshot, exp)
	}
	catalog.flush(ctx, pipe)
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, err
	}
	out := make([]Result, len(ws))
	for i, c := range cmds {
		r, err := writeResult(c, ws[i].Snapshot.RunID)
		if err != nil {
			return nil, err
		}
		out[i] = r
	}
	return out, nil
}

// EncodedWrite is one write of [WriteEncoded]: a snapshot already encoded.
type EncodedWrite struct {
	// RunID names the key written, Key(RunID); TenantID and Status go into
	// the change notification.
	RunID, TenantID, Status string
	// Snapshot is the encoded snapshot, stored as is. Its "lastEventSeq"
	// field must equal LastEventSeq: the script reads the stored watermark
	// from it.
	Snapshot     []byte
	LastEventSeq int64
	// Expected is the stored watermark the write is guarded on; -1 means
	// no snapshot yet.
	Expected int64
}

// WriteEncoded runs the guarded write script in ModeCAS once per write,
// all in one pipeline, the way [WriteAll] sends a batch (EVALSHA, loading
// the script on NOSCRIPT), and nothing else: no encoding of snapshots, no
// run index updates. It is the floor of what a projector's writes cost:
// `runstream bench project` compares the projector's catch-up with it. It
// returns how many writes lost their guard.
func WriteEncoded(ctx context.Context, rdb redis.UniversalClient, ws []EncodedWrite) (int, error) {
	if len(ws) == 0 {
		return 0, nil
	}
	var lost int
	err := withScript(ctx, rdb, writeScript, "snapshot", func() (err error) {
		lost, err = runEncodedWrites(ctx, rdb, ws)
		return err
	})
	return lost, err
}

func runEncodedWrites(ctx context.Context, rdb redis.UniversalClient, ws []EncodedWrite) (int, error) {
	pipe := rdb.Pipeline()
	channel := UpdatesChannelOf(rdb)
	cmds := make([]*redis.Cmd, len(ws))
	for i := range ws {
		w := &ws[i]
		note := Notification{RunID: w.RunID, TenantID: w.TenantID, LastEventSeq: w.LastEventSeq, Status: w.Status}.Append(nil)
		cmds[i] = evalWrite(ctx, pipe, channel, w.RunID, w.Expected, w.Snapshot, note, ModeCAS, w.LastEventSeq, 0)
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return 0, err
	}
	lost := 0
	for i, c := range cmds {
		r, err := writeResult(c, ws[i].RunID)
		if err != nil {
			return 0, err
		}
		if !r.Written {
			lost++
		}
	}
	return lost, nil
}

// evalWrite queues one run of the write script on pipe, publishing on
// channel; exp is when the snapshot expires (unix ms, 0: never).
func evalWrite(ctx context.Context, pipe redis.Pipeliner, channel, runID string, expected int64, body, note []byte, mode Mode, seq, exp int64) *redis.Cmd {
	return writeScript.EvalSha(ctx, pipe, []string{Key(runID)}, expected, body, note, mode.String(), seq, channel, exp)
}

// writeResult reads the write script's answer.
func writeResult(c *redis.Cmd, runID string) (Result, error) {
	vals, err := c.Int64Slice()
	if err != nil {
		return Result{}, fmt.Errorf("snapshot script for run %q: %w", runID, err)
	}
	var r Result
	switch {
	case len(vals) > 0 && vals[0] == 1:
		r.Written = true
	case len(vals) > 0 && vals[0] == 2:
		r.Expired, r.Stored = true, -1
	case len(vals) > 1:
		r.Stored = vals[1]
	}
	return r, nil
}

// withScript runs exec, and once more after loading s when Redis did not
// know the script (after a restart or a failover); what names the script
// in the error of a failed load.
func withScript(ctx context.Context, rdb redis.UniversalClient, s *redis.Script, what string, exec func() error) error {
	err := exec()
	if err != nil && strings.HasPrefix(err.Error(), "NOSCRIPT") {
		if err := s.Load(ctx, rdb).Err(); err != nil {
			return fmt.Errorf("loading the %s script: %w", what, err)
		}
		err = exec()
	}
	return err
}

// scoreOf is a snapshot's run index score: its updatedAt in unix
// milliseconds (the persistedAt of its last event).
func scoreOf(s *store.RunSnapshot) float64 {
	t, err := time.Parse(time.RFC3339Nano, s.UpdatedAt)
	if err != nil {
		return 0
	}
	return indexScore(t)
}

func indexScore(t time.Time) float64 { return float64(t.UnixMilli()) }

// Reindex puts runs back in their tenants' run indexes and catalogs:
// each run's snapshot, when Redis has one, is catalogued (the catalog
// script, which also restores the index entry); a run without one gets its
// index entry back, scored by the persistedAt of its last event (ZADD GT:
// an entry never moves back). Convergence uses it for a run whose snapshot
// is there but whose index or catalog entry is not (runs written before
// the catalog existed, or a catalog write that failed). ttl is the
// snapshot retention, for the catalog's expiry entries (see [Catalog]).
func Reindex(ctx context.Context, rdb redis.UniversalClient, runs []store.RunHead, ttl time.Duration) error {
	if len(runs) == 0 {
		return nil
	}
	ids := make([]string, len(runs))
	for i, h := range runs {
		ids[i] = h.RunID
	}
	snaps, _, err := Load(ctx, rdb, ids)
	if err != nil {
		return err
	}
	var found []store.RunSnapshot
	pipe := rdb.Pipeline()
	n := 0
	for _, h := range runs {
		if s, ok := snaps[h.RunID]; ok && s.TenantID == h.TenantID {
			found = append(found, s)
			continue
		}
		pipe.ZAddGT(ctx, IndexKey(h.TenantID), redis.Z{Score: indexScore(h.LastPersistedAt), Member: h.RunID})
		n++
	}
	if n > 0 {
		if _, err := pipe.Exec(ctx); err != nil {
			return err
		}
	}
	return Catalog(ctx, rdb, found, ttl)
}
