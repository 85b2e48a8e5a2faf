package main

import (
	"context"
	"flag"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/runstream/runstream/internal/config"
	"github.com/runstream/runstream/internal/kgroup"
	"github.com/runstream/runstream/internal/testenv"
)

func TestMemberFlags(t *testing.T) {
	env := map[string]string{"HOSTNAME": "3f2a9c1d0b7e", "POD": "runstream-projector-0"}
	for _, tc := range []struct {
		args    []string
		env     map[string]string
		session time.Duration
		id      string
		err     string
	}{
		{args: nil, session: kgroup.DefaultSessionTimeout, id: ""},
		{env: map[string]string{"RUNSTREAM_SESSION_TIMEOUT": "6s", "RUNSTREAM_INSTANCE_ID": "runstream-projector-2"},
			session: 6 * time.Second, id: "runstream-projector-2"},
		{args: []string{"--instance-id", "projector-${HOSTNAME}"}, session: kgroup.DefaultSessionTimeout, id: "projector-3f2a9c1d0b7e"},
		{env: map[string]string{"RUNSTREAM_INSTANCE_ID": "$POD"}, session: kgroup.DefaultSessionTimeout, id: "runstream-projector-0"},
		{args: []string{"--instance-id", "p-${NOT_SET}"}, err: "NOT_SET, which is not set"},
		{args: []string{"--instance-id", "two words"}, err: "Kafka allows"},
		{args: []string{"--session-timeout", "3s"}, err: "--session-timeout"},
		{args: []string{"--session-timeout", "0s"}, err: "--session-timeout"},
	} {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		var f memberFlags
		f.register(fs)
		getenv := func(k string) string {
			if v, ok := tc.env[k]; ok {
				return v
			}
			return env[k]
		}
		f.getenv = getenv
		if err := config.Parse(fs, tc.args, getenv); err != nil {
			t.Fatalf("%v %v: %v", tc.args, tc.env, err)
		}
		session, id, err := f.values()
		switch {
		case tc.err != "":
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%v %v: err %v, want it to mention %q", tc.args, tc.env, err, tc.err)
			}
		case err != nil:
			t.Errorf("%v %v: %v", tc.args, tc.env, err)
		case session != tc.session || id != tc.id:
			t.Errorf("%v %v: session %v, instance id %q; want %v, %q", tc.args, tc.env, session, id, tc.session, tc.id)
		}
	}
}

// TestRun_MemberFlagsOfProjectorAndETL: both commands take the flags
// (and their environment variables) and refuse bad values before they
// connect to anything.
func TestRun_MemberFlagsOfProjectorAndETL(t *testing.T) {
	base := map[string]string{"RUNSTREAM_KAFKA_BROKERS": "127.0.0.1:1", "RUNSTREAM_POSTGRES_URL": "postgres://x"}
	for _, cmd := range []string{"projector", "etl"} {
		for k, want := range map[string]string{
			"RUNSTREAM_SESSION_TIMEOUT": "--session-timeout",
			"RUNSTREAM_INSTANCE_ID":     "--instance-id",
		} {
			env := map[string]string{k: "${UNSET_VAR}"}
			if k == "RUNSTREAM_SESSION_TIMEOUT" {
				env[k] = "1s"
			}
			var out testenv.Buffer
			err := run(context.Background(), []string{cmd}, func(k string) string {
				if v, ok := env[k]; ok {
					return v
				}
				return base[k]
			}, &out, &out)
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("%s with %s=%s: err = %v, want it to mention %s", cmd, k, env[k], err, want)
			}
		}
	}
}
