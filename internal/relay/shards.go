package relay

import (
	"context"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"sort"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/runstream/runstream/store/postgres"
)

// maxMembers bounds the membership slots; more relays than this would not
// find a slot (and could not own a shard anyway with 64 shards).
const maxMembers = 1024

// lockKeys are the advisory-lock namespaces of one schema: key1 of the
// two-int4 form. Deriving them from the schema keeps relays of different
// schemas (tests run in parallel, one schema each) out of each other's way.
type lockKeys struct {
	member, shard int32
}

func newLockKeys(schema string) lockKeys {
	h := func(s string) int32 {
		f := fnv.New32a()
		f.Write([]byte(schema + ":" + s))
		return int32(f.Sum32() & 0x7fffffff)
	}
	return lockKeys{member: h("relay-member"), shard: h("relay-shard")}
}

// owner holds the relay's session-level advisory locks on one dedicated
// connection: a membership slot, and the shards it owns. Locks vanish with
// the session, so a crashed relay frees its shards at once. Only the
// relay's loop goroutine uses it.
type owner struct {
	conn  *pgxpool.Conn
	keys  lockKeys
	slot  int32
	owned map[int32]bool
}

func newOwner(ctx context.Context, pool *pgxpool.Pool) (*owner, error) {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("acquiring the relay's lock connection: %w", err)
	}
	var schema string
	if err := conn.QueryRow(ctx, `SELECT current_schema()`).Scan(&schema); err != nil {
		conn.Release()
		return nil, fmt.Errorf("reading current_schema: %w", err)
	}
	o := &owner{conn: conn, keys: newLockKeys(schema), slot: -1, owned: map[int32]bool{}}
	for slot := int32(0); slot < maxMembers; slot++ {
		var ok bool
		if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1, $2)`, o.keys.member, slot).Scan(&ok); err != nil {
			o.close()
			return nil, fmt.Errorf("taking a relay membership slot: %w", err)
		}
		if ok {
			o.slot = slot
			return o, nil
		}
	}
	o.close()
	return nil, fmt.Errorf("all %d relay membership slots are taken", maxMembers)
}

// close ends the session, which releases every lock at once. The
// connection is destroyed rather than returned to the pool so no lock can
// outlive the owner.
func (o *owner) close() {
	if o.conn == nil {
		return
	}
	_ = o.conn.Conn().Close(context.Background())
	o.conn.Release()
	o.conn = nil
	o.owned = map[int32]bool{}
}

// members counts live relays of this schema.
func (o *owner) members(ctx context.Context) (int, error) {
	var n int
	err := o.conn.QueryRow(ctx, `SELECT count(*) FROM pg_locks
		WHERE locktype = 'advisory' AND granted AND objsubid = 2 AND classid = $1::int8::oid
		  AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`, o.keys.member).Scan(&n)
	return n, err
}

// rebalance releases or takes shards so this relay owns its fair share,
// ceil(NumShards / members). Callers make sure no work of a released shard
// is in flight.
func (o *owner) rebalance(ctx context.Context) error {
	n, err := o.members(ctx)
	if err != nil {
		return fmt.Errorf("counting relays: %w", err)
	}
	n = max(n, 1)
	target := (postgres.NumShards + n - 1) / n
	for len(o.owned) > target {
		var drop int32 = -1
		for s := range o.owned {
			if drop < 0 || s > drop {
				drop = s
			}
		}
		var ok bool
		if err := o.conn.QueryRow(ctx, `SELECT pg_advisory_unlock($1, $2)`, o.keys.shard, drop).Scan(&ok); err != nil {
			return fmt.Errorf("releasing shard %d: %w", drop, err)
		}
		delete(o.owned, drop)
	}
	if len(o.owned) >= target {
		return nil
	}
	// Start at a random shard so relays starting together do not all race
	// for the same ones.
	start := rand.IntN(postgres.NumShards)
	for i := 0; i < postgres.NumShards && len(o.owned) < target; i++ {
		s := int32((start + i) % postgres.NumShards)
		if o.owned[s] {
			continue
		}
		var ok bool
		if err := o.conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1, $2)`, o.keys.shard, s).Scan(&ok); err != nil {
			return fmt.Errorf("taking shard %d: %w", s, err)
		}
		if ok {
			o.owned[s] = true
		}
	}
	return nil
}

// shards returns the owned shards, sorted.
func (o *owner) shards() []int32 {
	out := make([]int32, 0, len(o.owned))
	for s := range o.owned {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}
