package snapshots

import (
	"context"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/runstream/runstream/internal/testenv"
	"github.com/runstream/runstream/internal/workload"
	"github.com/runstream/runstream/reduce"
	"github.com/runstream/runstream/store"
)

// BenchmarkRedisBytesPerRun measures what one retained run of the demo's
// shape (internal/workload, as `runstream dev --demo` drives it: 5 to 8
// steps with retries, artifacts) costs Redis, in each encoding: 20,000
// terminal runs written through the projector's write path (snapshot,
// catalog, expiry set) into a private redis-server, used_memory before and
// after. Reported as B/run (all of it), snapshot-B/run (MEMORY USAGE of
// the snapshot keys) and value-B/run (their length). Run it with
//
//	go test -run '^$' -bench RedisBytesPerRun -benchtime 1x ./snapshots/
//
// (docs/OPERATIONS.md, "Sizing Redis", has the numbers).
func BenchmarkRedisBytesPerRun(b *testing.B) {
	for _, enc := range []Encoding{EncodingJSON, EncodingGzip} {
		b.Run(enc.String(), func(b *testing.B) {
			srv := testenv.StartRedis(b)
			rdb := redis.NewClient(&redis.Options{Addr: srv.Addr})
			defer rdb.Close()
			ctx := context.Background()
			const runs = 20000
			for range b.N {
				if err := rdb.FlushAll(ctx).Err(); err != nil {
					b.Fatal(err)
				}
				before := usedMemory(b, rdb)
				rng := rand.New(rand.NewPCG(1, 2))
				now := time.Now()
				var ws []Write
				for i := range runs {
					evs := workload.Run(rng, "tenant_demo", workload.Options{})
					recs := make([]store.RunEventRecord, len(evs))
					for j, e := range evs {
						recs[j] = store.RunEventRecord{RunEventWrite: e, RunSeq: int64(j + 1),
							PersistedAt: store.FormatPersistedAt(now.Add(time.Duration(i*20+j) * time.Millisecond))}
					}
					s, _ := reduce.Project(store.RunSnapshot{}, recs)
					ws = append(ws, Write{Snapshot: s, Expected: -1, TTL: DefaultTTL, Encoding: enc})
					if len(ws) == 500 {
						if _, err := WriteAll(ctx, rdb, ws); err != nil {
							b.Fatal(err)
						}
						ws = ws[:0]
					}
				}
				after := usedMemory(b, rdb)
				var snapMem, snapLen int64
				it := rdb.Scan(ctx, 0, "runstream:run:*", 1000).Iterator()
				for it.Next(ctx) {
					m, _ := rdb.MemoryUsage(ctx, it.Val()).Result()
					l, _ := rdb.StrLen(ctx, it.Val()).Result()
					snapMem += m
					snapLen += l
				}
				b.ReportMetric(float64(after-before)/runs, "B/run")
				b.ReportMetric(float64(snapMem)/runs, "snapshot-B/run")
				b.ReportMetric(float64(snapLen)/runs, "value-B/run")
			}
		})
	}
}

func usedMemory(b *testing.B, rdb *redis.Client) int64 {
	b.Helper()
	info, err := rdb.Info(context.Background(), "memory").Result()
	if err != nil {
		b.Fatal(err)
	}
	for _, l := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(l, "used_memory:"); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				b.Fatal(err)
			}
			return n
		}
	}
	b.Fatal("INFO memory has no used_memory")
	return 0
}
