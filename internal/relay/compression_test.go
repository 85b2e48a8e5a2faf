package relay_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runstream/runstream/internal/relay"
	"github.com/runstream/runstream/internal/testenv/testkafka"
)

// TestCompressionOption_RoundTrip produces with every codec the flag
// accepts and reads the records back: the batch's codec is the one asked
// for (a batch-level hook sees it) and the records arrive whole.
func TestCompressionOption_RoundTrip(t *testing.T) {
	k := testkafka.Start(t, kfake.SeedTopics(1, "codecs"))
	want := map[string]uint8{"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
	if len(want) != len(relay.Compressions) {
		t.Fatalf("relay.Compressions = %v, the test knows %d codecs", relay.Compressions, len(want))
	}
	for _, name := range relay.Compressions {
		opt, err := relay.CompressionOption(name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var hook codecHook
		cl, err := kgo.NewClient(append(relay.ClientOptions(k.Brokers), opt, kgo.WithHooks(&hook))...)
		if err != nil {
			t.Fatal(err)
		}
		value := strings.Repeat(`{"runId":"r","eventType":"StepStarted"}`, 20)
		if err := cl.ProduceSync(context.Background(), &kgo.Record{Topic: "codecs", Key: []byte(name), Value: []byte(value)}).FirstErr(); err != nil {
			t.Fatalf("%s: producing: %v", name, err)
		}
		// franz-go calls the batch hook when it finishes the batch, which
		// may be after ProduceSync's promise returned (and Close does not
		// wait for it): wait for the hook, briefly.
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
			hook.mu.Lock()
			n := hook.records
			hook.mu.Unlock()
			if n > 0 {
				break
			}
		}
		cl.Close()
		hook.mu.Lock()
		if hook.codec != want[name] || hook.records != 1 {
			t.Errorf("%s: batch codec %d with %d records, want codec %d", name, hook.codec, hook.records, want[name])
		}
		hook.mu.Unlock()
	}
	cons, err := kgo.NewClient(kgo.SeedBrokers(k.Brokers...), kgo.ConsumeTopics("codecs"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	got := map[string]bool{}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for len(got) < len(want) && ctx.Err() == nil {
		fs := cons.PollFetches(ctx)
		fs.EachRecord(func(r *kgo.Record) {
			if len(r.Value) == 20*len(`{"runId":"r","eventType":"StepStarted"}`) {
				got[string(r.Key)] = true
			}
		})
	}
	if len(got) != len(want) {
		t.Fatalf("read back %v, want every codec", got)
	}
}

// codecHook records the codec of the batches a client wrote.
type codecHook struct {
	mu      sync.Mutex
	codec   uint8
	records int
}

func (h *codecHook) OnProduceBatchWritten(_ kgo.BrokerMetadata, _ string, _ int32, m kgo.ProduceBatchMetrics) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.codec, h.records = m.CompressionType, h.records+m.NumRecords
}

func TestCompressionOption_Unknown(t *testing.T) {
	for _, name := range []string{"", "brotli", "gzip9"} {
		_, err := relay.CompressionOption(name)
		if err == nil || !strings.Contains(err.Error(), "none, gzip, snappy, lz4, zstd") {
			t.Errorf("CompressionOption(%q) = %v, want an error listing the codecs", name, err)
		}
	}
	if _, err := relay.CompressionOption(relay.DefaultCompression); err != nil {
		t.Errorf("the default %q: %v", relay.DefaultCompression, err)
	}
}
