package lag

import (
	"context"
	"fmt"
	"slices"
	"sort"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TopicGroups lists the consumer groups of topic the brokers know: those
// with a committed offset on one of its partitions, and those with a
// member assigned one (a consumer that joined and has not committed yet),
// sorted by name. cl must be a plain client on the brokers (no group).
func TopicGroups(ctx context.Context, cl *kgo.Client, topic string) ([]string, error) {
	adm := kadm.NewClient(cl)
	listed, err := adm.ListGroups(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing the consumer groups: %w", err)
	}
	names := listed.Groups()
	if len(names) == 0 {
		return []string{}, nil
	}
	of := map[string]bool{}
	for g, r := range adm.FetchManyOffsets(ctx, names...) {
		if r.Err != nil {
			continue // a group we may not read: its lag could not be measured either
		}
		for _, o := range r.Fetched[topic] {
			if o.Err == nil && o.At >= 0 {
				of[g] = true
				break
			}
		}
	}
	// Members' assignments only decode for the consumer protocol; other
	// groups (connect, share) are not consumers of the topic here.
	described, err := adm.DescribeGroups(ctx, names...)
	if err != nil && len(described) == 0 {
		return nil, fmt.Errorf("describing the consumer groups: %w", err)
	}
	for g, d := range described {
		if d.Err == nil && len(d.AssignedPartitions()[topic]) > 0 {
			of[g] = true
		}
	}
	out := make([]string, 0, len(of))
	for g := range of {
		out = append(out, g)
	}
	sort.Strings(out)
	return out, nil
}

// GroupList is the groups a report of every group of a topic covers: the
// configured ones first, in their order (reported even before they
// commit), then the found ones by name, at most max; truncated says that
// some were left out.
func GroupList(configured, found []string, max int) (groups []string, truncated bool) {
	groups = slices.Clone(configured)
	found = slices.Sorted(slices.Values(found))
	for _, g := range found {
		if !slices.Contains(groups, g) {
			groups = append(groups, g)
		}
	}
	if len(groups) > max {
		return groups[:max], true
	}
	return groups, false
}
