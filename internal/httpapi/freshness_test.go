package httpapi_test

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runstream/runstream/internal/httpapi"
	"github.com/runstream/runstream/internal/lag"
	"github.com/runstream/runstream/internal/testenv"
	"github.com/runstream/runstream/internal/testenv/testkafka"
	"github.com/runstream/runstream/store/postgres"
)

// freshnessJSON is what the freshness tests read of a lag report.
type freshnessJSON struct {
	Group                 string  `json:"group"`
	TotalLag              int64   `json:"totalLag"`
	FreshnessSeconds      float64 `json:"freshnessSeconds"`
	FreshnessCountsOutbox bool    `json:"freshnessCountsOutbox"`
}

// GET /v1/lag and GET /v1/lag/groups carry each group's freshness: the
// age of the oldest commit it has not applied. A group with records
// unread on the topic is as old as the oldest of them; an outbox row
// older than that (an event committed and not yet published) makes every
// group at least as old as the row, the caught-up group too.
func TestLag_FreshnessCountsTheOutbox(t *testing.T) {
	const topic = "run-events"
	k := testkafka.Start(t, kfake.SeedTopics(1, topic))
	admin, err := kgo.NewClient(kgo.SeedBrokers(k.Brokers...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(admin.Close)
	ctx := context.Background()
	persisted := time.Now().Add(-20 * time.Second).UTC().Format(time.RFC3339Nano)
	for range 3 {
		v := []byte(`{"runId":"r","runSeq":1,"persistedAt":"` + persisted + `"}`)
		if err := admin.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: v}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	for g, at := range map[string]int64{"behind": 1, "caught-up": 3} {
		offs := kadm.Offsets{}
		offs.Add(kadm.Offset{Topic: topic, Partition: 0, At: at})
		if _, err := kadm.NewClient(admin).CommitOffsets(ctx, g, offs); err != nil {
			t.Fatal(err)
		}
	}
	pool := migratedPool(t, 10)
	e := newEnvOn(t, httpapi.Config{AuthTokens: roleTokens, LagTopic: topic, LagGroup: "behind", LagGroups: []string{"behind", "caught-up"},
		Lag: func(ctx context.Context, g string) (lag.Report, error) { return lag.Measure(ctx, admin, g) }}, pool, testenv.Redis(t))

	// check reads both routes and holds each group's freshness within
	// [lo, hi) seconds.
	check := func(what string, want map[string][2]float64) {
		t.Helper()
		got := map[string]freshnessJSON{}
		for g := range want {
			got[g] = getJSON[freshnessJSON](t, e.url+"/v1/lag?group="+g, "tok-op")
		}
		all := getJSON[struct {
			Groups []freshnessJSON `json:"groups"`
		}](t, e.url+"/v1/lag/groups", "tok-op")
		if len(all.Groups) != len(want) {
			t.Fatalf("%s: /v1/lag/groups reported %+v, want %d groups", what, all.Groups, len(want))
		}
		for _, rep := range all.Groups {
			for _, r := range []freshnessJSON{got[rep.Group], rep} {
				w := want[r.Group]
				if r.FreshnessSeconds < w[0] || r.FreshnessSeconds >= w[1] || !r.FreshnessCountsOutbox {
					t.Fatalf("%s: group %s freshness %.2fs (counts the outbox: %v), want [%v, %v) counting the outbox",
						what, r.Group, r.FreshnessSeconds, r.FreshnessCountsOutbox, w[0], w[1])
				}
			}
			t.Logf("%s: group %s lag %d records, freshness %.2fs", what, rep.Group, rep.TotalLag, rep.FreshnessSeconds)
		}
	}
	check("an empty outbox", map[string][2]float64{"behind": {20, 60}, "caught-up": {0, 1e-9}})

	// An event committed 90 s ago and never published.
	st, err := postgres.New(pool, postgres.Config{})
	if err != nil {
		t.Fatal(err)
	}
	appendRuns(t, st, "tenant_a", 1)
	if tag, err := pool.Exec(ctx, `UPDATE outbox SET created_at = clock_timestamp() - interval '90 seconds'`); err != nil || tag.RowsAffected() != 1 {
		t.Fatalf("ageing the outbox row: %v (%v rows)", err, tag.RowsAffected())
	}
	check("an outbox row 90 s old", map[string][2]float64{"behind": {90, 130}, "caught-up": {90, 130}})

	// The store does not answer: the lag is still reported, its freshness
	// the topic's only, and the answer says the outbox is not counted.
	pool.Close()
	all := getJSON[struct {
		Groups []freshnessJSON `json:"groups"`
	}](t, e.url+"/v1/lag/groups", "tok-op")
	if len(all.Groups) != 2 {
		t.Fatalf("the store closed: /v1/lag/groups reported %+v, want both groups", all.Groups)
	}
	for _, r := range append(all.Groups, getJSON[freshnessJSON](t, e.url+"/v1/lag?group=behind", "tok-op")) {
		if lo := map[string]float64{"behind": 20, "caught-up": 0}[r.Group]; r.FreshnessCountsOutbox || r.FreshnessSeconds < lo || r.FreshnessSeconds >= lo+40 {
			t.Fatalf("the store closed: group %s freshness %.2fs (counts the outbox: %v), want the topic's only (%vs) and the outbox not counted",
				r.Group, r.FreshnessSeconds, r.FreshnessCountsOutbox, lo)
		}
	}
}
