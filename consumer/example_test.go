package consumer_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"os/signal"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/runstream/runstream/consumer"
	"github.com/runstream/runstream/consumer/pgcheckpoint"
)

// An effectively-once sink: the handler writes through the checkpoint
// store's transaction, so its rows and the checkpoint commit together, and
// a redelivered record never reaches it twice. Gaps are filled through the
// runstream API.
func Example() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	pool, err := pgxpool.New(ctx, os.Getenv("ANALYTICS_DATABASE_URL"))
	if err != nil {
		log.Fatal(err)
	}
	cps, err := pgcheckpoint.New(ctx, pool)
	if err != nil {
		log.Fatal(err)
	}
	handler := consumer.HandlerFunc(func(ctx context.Context, ev consumer.Event) error {
		_, err := pgcheckpoint.Tx(ctx).Exec(ctx,
			`INSERT INTO run_event_counts (event_type, n) VALUES ($1, 1)
			 ON CONFLICT (event_type) DO UPDATE SET n = run_event_counts.n + 1`, ev.EventType)
		return err
	})
	c, err := consumer.New(consumer.Config{
		Brokers:     []string{"kafka:9092"},
		Group:       "analytics-etl",
		Checkpoints: cps,
		Fetcher:     &consumer.HTTPFetcher{BaseURL: "http://runstream-api:8080", Token: os.Getenv("RUNSTREAM_TOKEN")},
	}, handler)
	if err != nil {
		log.Fatal(err)
	}
	if err := c.Run(ctx); err != nil {
		log.Fatal(err)
	}
}

// A handler that only needs to see each event once per process can use the
// in-memory checkpoints and the store directly.
func ExampleHandlerFunc() {
	h := consumer.HandlerFunc(func(ctx context.Context, ev consumer.Event) error {
		fmt.Println(ev.RunID, ev.RunSeq, ev.EventType)
		return nil
	})
	_ = h
}
