package main

import (
	"flag"
	"fmt"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/runstream/runstream/internal/kgroup"
)

// memberFlags are the consumer-group membership settings of projector, dev
// and etl: the session timeout and static membership (KIP-345).
type memberFlags struct {
	sessionTimeout time.Duration
	instanceID     string
	// getenv expands ${VAR} in --instance-id; nil means os.Getenv.
	getenv func(string) string
}

func (f *memberFlags) register(fs *flag.FlagSet) {
	fs.DurationVar(&f.sessionTimeout, "session-timeout", kgroup.DefaultSessionTimeout,
		"how long the group waits for a member that stopped heartbeating (a crash) before moving its partitions; "+
			"the broker bounds it (group.min.session.timeout.ms, 6s by default)")
	fs.StringVar(&f.instanceID, "instance-id", "",
		"static group membership (group.instance.id, KIP-345): a replacement with the same id takes a crashed member's partitions at once; "+
			"unique per process, stable across its restarts (the pod name); ${VAR} is expanded from the environment; empty: dynamic membership")
}

// instanceIDChars is what Kafka accepts in a group.instance.id.
var instanceIDChars = regexp.MustCompile(`^[a-zA-Z0-9._-]{1,249}$`)

// values returns the session timeout and the instance id (expanded; empty
// for dynamic membership).
func (f *memberFlags) values() (time.Duration, string, error) {
	if f.sessionTimeout <= 3*time.Second {
		return 0, "", usageError{fmt.Errorf("--session-timeout (RUNSTREAM_SESSION_TIMEOUT) must be above the 3s heartbeat interval, got %v", f.sessionTimeout)}
	}
	getenv := f.getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	var unset []string
	id := strings.TrimSpace(os.Expand(f.instanceID, func(name string) string {
		v := getenv(name)
		if v == "" {
			unset = append(unset, name)
		}
		return v
	}))
	if len(unset) > 0 {
		return 0, "", usageError{fmt.Errorf("--instance-id (RUNSTREAM_INSTANCE_ID) %q refers to %s, which is not set: replicas would share an id",
			f.instanceID, strings.Join(unset, ", "))}
	}
	if id != "" && !instanceIDChars.MatchString(id) {
		return 0, "", usageError{fmt.Errorf("--instance-id (RUNSTREAM_INSTANCE_ID) %q: Kafka allows 1-249 of a-z A-Z 0-9 . _ -", id)}
	}
	return f.sessionTimeout, id, nil
}
