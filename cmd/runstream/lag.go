package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runstream/runstream/internal/config"
	"github.com/runstream/runstream/internal/lag"
	"github.com/runstream/runstream/internal/retry"
	"github.com/runstream/runstream/store"
)

func runLag(ctx context.Context, env *environment, args []string) error {
	fs := flag.NewFlagSet("lag", flag.ContinueOnError)
	brokers := fs.String("kafka-brokers", "127.0.0.1:9092", "Kafka bootstrap brokers, comma-separated")
	group := fs.String("group", store.DefaultProjectorGroup, "consumer group (the projector's by default; any group, e.g. an ETL's); one that does not exist exits 1")
	asJSON := fs.Bool("json", false, "print JSON")
	watch := fs.Bool("watch", false, "refresh like top until Ctrl-C")
	interval := fs.Duration("interval", 2*time.Second, "refresh interval with --watch")
	all := fs.Bool("all", false, "every consumer group of --topic: --group, the ETL's ("+store.DefaultETLGroup+") and those the brokers know with offsets on, or members assigned, the topic (as GET /v1/lag/groups; at most "+fmt.Sprint(maxLagGroupsReported)+")")
	topic := fs.String("topic", store.DefaultTopic, "the run-event topic whose groups --all reports")
	if err := parseFlags(fs, env, args, "runstream lag [flags]",
		"Consumer-group lag per partition: committed offset, end offset, lag in records, and lag in\nseconds from the timestamp of the oldest unconsumed record. Says when the group is\nrebalancing or empty rather than printing zeros. Each partition names its owner: member\nnumber, client id, instance id and host. --all reports every consumer group of the topic."); err != nil {
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
	if *all {
		return lagAll(ctx, env, cl, *topic, defaultLagGroups(*group), *asJSON, *watch, *interval)
	}
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
		if !rep.Exists && !*watch {
			// A mistyped --group must not look like a healthy idle group
			// (exit 0 and zeros): say so and exit 1; --json still prints
			// the report ("exists": false) for scripts.
			if *asJSON {
				enc := json.NewEncoder(env.stdout)
				enc.SetIndent("", "  ")
				if err := enc.Encode(rep); err != nil {
					return err
				}
			}
			return unknownGroupError(ctx, cl, *group)
		}
		if *watch && !*asJSON {
			if isTerminal(env.stdout) {
				fmt.Fprint(env.stdout, "\033[H\033[2J") // clear the screen, like top
			} else {
				fmt.Fprintln(env.stdout) // a log of reports, one after another
			}
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
		if !retry.Sleep(ctx, *interval) {
			return nil
		}
	}
}

// unknownGroupError says that a group does not exist, and which groups
// the brokers do know, so a typo shows.
func unknownGroupError(ctx context.Context, cl *kgo.Client, group string) error {
	known := "(could not list the groups there)"
	lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if gs, err := kadm.NewClient(cl).ListGroups(lctx); err == nil {
		if names := gs.Groups(); len(names) > 0 {
			known = strings.Join(names, ", ")
		} else {
			known = "(none)"
		}
	}
	return fmt.Errorf("consumer group %q does not exist: no consumer is a member and none ever committed under this name (--group, RUNSTREAM_GROUP); groups on these brokers: %s", group, known)
}

// maxLagGroupsReported bounds lag --all as GET /v1/lag/groups is bounded:
// each group costs a describe, an offset fetch and a read per lagging
// partition.
const maxLagGroupsReported = 100

// lagAll is lag --all: the report of every consumer group of topic, the
// configured ones first (a configured group that never started says so,
// without failing), once or with --watch.
func lagAll(ctx context.Context, env *environment, cl *kgo.Client, topic string, configured []string, asJSON, watch bool, interval time.Duration) error {
	configured = slices.Compact(configured)
	for {
		mctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		found, err := lag.TopicGroups(mctx, cl, topic)
		var reps []lag.Report
		var truncated bool
		if err == nil {
			var groups []string
			groups, truncated = lag.GroupList(configured, found, maxLagGroupsReported)
			for _, g := range groups {
				rep, merr := lag.Measure(mctx, cl, g)
				if merr != nil {
					err = merr
					break
				}
				reps = append(reps, rep)
			}
		}
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("%w (are the brokers reachable?)", err)
		}
		if asJSON {
			enc := json.NewEncoder(env.stdout)
			if !watch {
				enc.SetIndent("", "  ")
			}
			if err := enc.Encode(map[string]any{"topic": topic, "groups": reps, "truncated": truncated}); err != nil {
				return err
			}
		} else {
			if watch {
				if isTerminal(env.stdout) {
					fmt.Fprint(env.stdout, "\033[H\033[2J")
				} else {
					fmt.Fprintln(env.stdout)
				}
			}
			fmt.Fprintf(env.stdout, "topic %s: %d consumer groups", topic, len(reps))
			if truncated {
				fmt.Fprintf(env.stdout, " (the first %d: more exist)", maxLagGroupsReported)
			}
			fmt.Fprintln(env.stdout)
			for _, rep := range reps {
				fmt.Fprintln(env.stdout)
				fmt.Fprint(env.stdout, rep.Text())
			}
		}
		if !watch {
			return nil
		}
		if !retry.Sleep(ctx, interval) {
			return nil
		}
	}
}
