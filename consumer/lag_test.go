package consumer_test

import (
	"context"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runstream/runstream/internal/lag"
)

// lagOf returns a group's total lag (the group must have committed).
func lagOf(ctx context.Context, cl *kgo.Client, group string) (int64, error) {
	rep, err := lag.Measure(ctx, cl, group)
	if err != nil {
		return 0, err
	}
	if len(rep.Partitions) == 0 {
		return -1, nil
	}
	return rep.TotalLag, nil
}
