package main

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runstream/runstream/internal/lag"
	"github.com/runstream/runstream/internal/testenv"
	"github.com/runstream/runstream/internal/testenv/testkafka"
)

// runstream lag --all reports every consumer group of the topic: the
// projector's (a member, owner by client id), the ETL's even when it
// never started (exit 0: it is configured, not mistyped), a group that
// only committed on the topic, never a group of another topic.
func TestRun_LagAllGroupsOfTheTopic(t *testing.T) {
	broker := testkafka.Start(t, kfake.SeedTopics(2, "run-events", "other")).Brokers[0]
	ctx := context.Background()
	admin, err := kgo.NewClient(kgo.SeedBrokers(broker))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	for g, topic := range map[string]string{"audit-sink": "run-events", "elsewhere": "other"} {
		offs := kadm.Offsets{}
		offs.Add(kadm.Offset{Topic: topic, Partition: 0, At: 0})
		if _, err := kadm.NewClient(admin).CommitOffsets(ctx, g, offs); err != nil {
			t.Fatal(err)
		}
	}
	consumer, err := kgo.NewClient(kgo.SeedBrokers(broker), kgo.ConsumerGroup("runstream-projector"), kgo.ConsumeTopics("run-events"),
		kgo.ClientID("runstream-projector-host1-7"), kgo.InstanceID("projector-0"))
	if err != nil {
		t.Fatal(err)
	}
	defer consumer.Close()
	var got struct {
		Topic     string       `json:"topic"`
		Groups    []lag.Report `json:"groups"`
		Truncated bool         `json:"truncated"`
	}
	testenv.WaitUntil(t, 20*time.Second, func() error {
		pctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		consumer.PollFetches(pctx)
		cancel()
		stdout, _, err := runCaptured(t, "lag", "--kafka-brokers", broker, "--all", "--json")
		if err != nil {
			return err
		}
		if err := json.Unmarshal([]byte(stdout), &got); err != nil {
			return err
		}
		if len(got.Groups) == 0 || got.Groups[0].State != "Stable" || len(got.Groups[0].Partitions) != 2 || got.Groups[0].Partitions[0].Owner == nil {
			return fmt.Errorf("not settled: %s", stdout)
		}
		return nil
	})
	var names []string
	for _, r := range got.Groups {
		names = append(names, r.Group)
	}
	if got.Topic != "run-events" || got.Truncated || !slices.Equal(names, []string{"runstream-projector", "runstream-etl", "audit-sink"}) {
		t.Fatalf("groups %v of %q (truncated %v): want the projector's, the ETL's, then audit-sink; never elsewhere", names, got.Topic, got.Truncated)
	}
	if o := got.Groups[0].Partitions[0].Owner; o.ClientID != "runstream-projector-host1-7" || o.InstanceID != "projector-0" || o.Host == "" {
		t.Fatalf("owner %+v", o)
	}
	if got.Groups[1].Exists || got.Groups[1].Note == "" {
		t.Fatalf("the ETL's group that never started: %+v, want exists false with a note", got.Groups[1])
	}
	stdout, _, err := runCaptured(t, "lag", "--kafka-brokers", broker, "--all")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"topic run-events: 3 consumer groups", "group runstream-projector", "#1 runstream-projector-host1-7 (projector-0) ", "group runstream-etl", "group audit-sink"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("lag --all text lacks %q:\n%s", want, stdout)
		}
	}
}
