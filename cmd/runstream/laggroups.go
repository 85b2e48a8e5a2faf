package main

import (
	"flag"
	"fmt"
	"slices"
	"strings"

	"github.com/runstream/runstream/store"
)

// maxLagGroups bounds --lag-groups: each group costs a DescribeGroups, an
// OffsetFetch and a fetch of its lagging partitions' oldest records per
// refresh.
const maxLagGroups = 50

// lagGroupsFlag is --lag-groups: the consumer groups whose lag the
// process exports as runstream_consumer_lag_{records,seconds}.
type lagGroupsFlag struct{ raw string }

func (f *lagGroupsFlag) register(fs *flag.FlagSet) {
	fs.StringVar(&f.raw, "lag-groups", "",
		"consumer groups of the topic whose lag is exported as runstream_consumer_lag_{records,seconds}, comma-separated (default: --group and the ETL's "+store.DefaultETLGroup+")")
}

// groups resolves the flag: the listed groups, or the projector's group
// (--group) and the ETL's default group when none are listed.
func (f *lagGroupsFlag) groups(projectorGroup string) ([]string, error) {
	if strings.TrimSpace(f.raw) == "" {
		return defaultLagGroups(projectorGroup), nil
	}
	var out []string
	for _, g := range strings.Split(f.raw, ",") {
		g = strings.TrimSpace(g)
		if err := checkGroupName(g); err != nil {
			return nil, fmt.Errorf("--lag-groups (RUNSTREAM_LAG_GROUPS): %w", err)
		}
		if !slices.Contains(out, g) {
			out = append(out, g)
		}
	}
	if len(out) > maxLagGroups {
		return nil, fmt.Errorf("--lag-groups (RUNSTREAM_LAG_GROUPS) lists %d groups, at most %d are exported: list the groups you alert on", len(out), maxLagGroups)
	}
	return out, nil
}

// defaultLagGroups are the groups lag is reported for unless told: the
// projectors' (--group) and the ETL's default group.
func defaultLagGroups(projectorGroup string) []string {
	return slices.Compact([]string{projectorGroup, store.DefaultETLGroup})
}

// checkGroupName accepts what Kafka accepts as a group id in practice:
// 1 to 255 printable ASCII characters without spaces.
func checkGroupName(g string) error {
	if g == "" {
		return fmt.Errorf("an empty group name (a stray comma?)")
	}
	if len(g) > 255 {
		return fmt.Errorf("group name of %d bytes, at most 255", len(g))
	}
	for _, r := range g {
		if r <= ' ' || r > '~' {
			return fmt.Errorf("group name %q has a character outside printable ASCII (or a space)", g)
		}
	}
	return nil
}
