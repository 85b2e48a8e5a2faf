package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runstream/runstream/internal/config"
	"github.com/runstream/runstream/internal/lag"
	"github.com/runstream/runstream/store"
)

func runLag(ctx context.Context, env *environment, args []string) error {
	fs := flag.NewFlagSet("lag", flag.ContinueOnError)
	brokers := fs.String("kafka-brokers", "127.0.0.1:9092", "Kafka bootstrap brokers, comma-separated")
	group := fs.String("group", store.DefaultProjectorGroup, "consumer group (the projector's by default; any group, e.g. an ETL's)")
	asJSON := fs.Bool("json", false, "print JSON")
	watch := fs.Bool("watch", false, "refresh like top until Ctrl-C")
	interval := fs.Duration("interval", 2*time.Second, "refresh interval with --watch")
	if err := parseFlags(fs, env, args, "runstream lag [flags]",
		"Consumer-group lag per partition: committed offset, end offset, lag in records, and lag in\nseconds from the timestamp of the oldest unconsumed record. Says when the group is\nrebalancing or empty rather than printing zeros."); err != nil {
		return err
	}
	if *interval < 100*time.Millisecond {
		return usageError{fmt.Errorf("--interval must be at least 100ms, got %v", *interval)}
	}
	list := config.Brokers(*brokers)
	if len(list) == 0 {
		return usageError{fmt.Errorf("--kafka-brokers (RUNSTREAM_KAFKA_BROKERS) is empty")}
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(list...))
	if err != nil {
		return fmt.Errorf("creating the Kafka client: %w", err)
	}
	defer cl.Close()
	for {
		mctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		rep, err := lag.Measure(mctx, cl, *group)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("%w (are the brokers %v reachable?)", err, list)
		}
		if *watch && !*asJSON {
			fmt.Fprint(env.stdout, "\033[H\033[2J") // clear the screen, like top
		}
		if *asJSON {
			enc := json.NewEncoder(env.stdout)
			if !*watch {
				enc.SetIndent("", "  ")
			}
			if err := enc.Encode(rep); err != nil {
				return err
			}
		} else {
			fmt.Fprint(env.stdout, rep.Text())
		}
		if !*watch {
			return nil
		}
		t := time.NewTimer(*interval)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
	}
}
