package consumer

import (
	"testing"
	"time"
)

// TestConfig_NegativeIsAnErrorNotOff: convergence is turned off with
// DisableConvergence; a negative interval, which once meant "off", is an
// error naming the field, and a zero one means the default.
func TestConfig_NegativeIsAnErrorNotOff(t *testing.T) {
	base := Config{Brokers: []string{"127.0.0.1:1"}, Group: "g", Fetcher: &HTTPFetcher{BaseURL: "http://127.0.0.1:1"}}
	neg := base
	neg.ConvergeInterval = -time.Second
	if err := neg.Validate(); err == nil {
		t.Error("ConvergeInterval < 0 was accepted")
	}
	off := base
	off.DisableConvergence = true
	if err := off.Validate(); err != nil {
		t.Errorf("DisableConvergence: %v", err)
	}
	def := base
	def.setDefaults()
	if def.Topic == "" || def.MaxAttempts != 5 || def.MaxQueuedRecords != 250 || def.DeadLetterTopic != def.Topic+".dlq" || def.ConvergeName != "g" {
		t.Errorf("defaults: %+v", def)
	}
}
