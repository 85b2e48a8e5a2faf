package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runstream/runstream/internal/lag"
	"github.com/runstream/runstream/internal/testenv"
	"github.com/runstream/runstream/internal/testenv/testkafka"
)

func runCaptured(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errOut testenv.Buffer
	err = run(context.Background(), args, func(string) string { return "" }, &out, &errOut)
	return out.String(), errOut.String(), err
}

// help <command> prints that command's help, the same as <command> --help,
// for nested commands too; help of an unknown command is a usage error.
func TestRun_HelpCommand(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"help", "api"}, "Usage: runstream api [flags]"},
		{[]string{"help", "lag"}, "Usage: runstream lag [flags]"},
		{[]string{"help", "relay", "dlq", "list"}, "Usage: runstream relay dlq list"},
		{[]string{"help", "bench"}, "Usage: runstream bench <benchmark>"},
		{[]string{"help", "bench", "relay"}, "Usage: runstream bench relay [flags]"},
		{[]string{"bench", "help", "read"}, "Usage: runstream bench read [flags]"},
		{[]string{"help", "version"}, "Usage: runstream version"},
	} {
		_, stderr, err := runCaptured(t, tc.args...)
		if err != nil && !errors.Is(err, flag.ErrHelp) {
			t.Errorf("%v: err = %v, want exit 0", tc.args, err)
		}
		if !strings.HasPrefix(stderr, tc.want) {
			t.Errorf("%v printed:\n%s\nwant it to start with %q", tc.args, stderr, tc.want)
		}
	}
	_, stderr, err := runCaptured(t, "help", "frob")
	if err == nil || !strings.Contains(err.Error(), `unknown command "frob"`) || exitCode(err) != 2 {
		t.Errorf("help frob: err = %v, want an unknown-command usage error", err)
	}
	if !strings.Contains(stderr, "Commands:") {
		t.Errorf("help frob printed no command list:\n%s", stderr)
	}
}

// The top-level help lists every command and every bench subcommand;
// help help is that help too (help has no flags of its own to show).
func TestRun_TopLevelHelpListsEverything(t *testing.T) {
	for _, args := range [][]string{{"help"}, {"--help"}, {"help", "--help"}, {"help", "help"}} {
		_, stderr, err := runCaptured(t, args...)
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		for _, c := range commands() {
			if !strings.Contains(stderr, "\n  "+c.name+" ") {
				t.Errorf("%v does not list %s:\n%s", args, c.name, stderr)
			}
		}
		if !strings.Contains(stderr, "web console is served at the API's /") {
			t.Errorf("%v does not mention the console:\n%s", args, stderr)
		}
		for _, c := range benchCommands() {
			if !strings.Contains(stderr, "\n    "+c.name+" ") || !strings.Contains(stderr, c.summary) {
				t.Errorf("%v does not list bench %s:\n%s", args, c.name, stderr)
			}
		}
	}
}

// An unknown flag's error is returned once (runProcess prints it) and
// nothing else is printed: no second copy, no usage dump.
func TestRun_UnknownFlagPrintedOnce(t *testing.T) {
	for _, args := range [][]string{{"api", "--frob"}, {"lag", "--frob"}, {"bench", "relay", "--frob"}, {"relay", "dlq", "list", "--frob"}} {
		stdout, stderr, err := runCaptured(t, args...)
		if err == nil || exitCode(err) != 2 || !strings.Contains(err.Error(), "flag provided but not defined: -frob") ||
			!strings.Contains(err.Error(), "runstream help") {
			t.Errorf("%v: err = %v, want a usage error naming -frob and pointing at help", args, err)
		}
		if stdout != "" || stderr != "" {
			t.Errorf("%v printed besides the returned error:\nstdout %q\nstderr %q", args, stdout, stderr)
		}
	}
}

// --version, -v and version print the version, the commit and the Go
// version.
func TestRun_Version(t *testing.T) {
	for _, args := range [][]string{{"--version"}, {"-v"}, {"version"}} {
		stdout, _, err := runCaptured(t, args...)
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		b := readBuildInfo()
		for _, want := range []string{"runstream " + b.Version, "commit ", b.GoVersion} {
			if !strings.Contains(stdout, want) {
				t.Errorf("%v printed %q, want it to contain %q", args, stdout, want)
			}
		}
	}
	if _, _, err := runCaptured(t, "version", "extra"); exitCode(err) != 2 {
		t.Errorf("version extra: err = %v, want a usage error", err)
	}
}

// Every component's registry carries runstream_build_info.
func TestNewRegistry_BuildInfo(t *testing.T) {
	b := readBuildInfo()
	mfs, err := newRegistry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "runstream_build_info" {
			continue
		}
		m := mf.GetMetric()[0]
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		want := map[string]string{"version": b.Version, "revision": b.revisionLabel(), "goversion": b.GoVersion}
		if m.GetGauge().GetValue() != 1 || len(labels) != 3 || labels["version"] != want["version"] ||
			labels["revision"] != want["revision"] || labels["goversion"] != want["goversion"] {
			t.Fatalf("runstream_build_info %v = %v, want %v = 1", labels, m.GetGauge().GetValue(), want)
		}
		return
	}
	t.Fatal("no runstream_build_info in newRegistry")
}

// A connection failure's hint matches its cause, and the command prints
// nothing of its own besides the error it returns (runProcess prints it
// once): a wrong Redis user or password says to check the credentials,
// a Redis or Postgres that does not answer asks whether it runs.
func TestRun_ConnectionHints(t *testing.T) {
	_, schema := testenv.Postgres(t, 2)
	pgURL := testenv.PostgresURLWithSchema(t, schema)
	rURL := redisURL(t)
	for _, tc := range []struct {
		name      string
		env       map[string]string
		want, not string
	}{
		{"redis wrong user", map[string]string{"RUNSTREAM_POSTGRES_URL": pgURL, "RUNSTREAM_REDIS_URL": strings.Replace(rURL, "redis://", "redis://runstream-no-such-user:x@", 1)},
			"check the user and password in RUNSTREAM_REDIS_URL", "is it running"},
		{"redis unreachable", map[string]string{"RUNSTREAM_POSTGRES_URL": pgURL, "RUNSTREAM_REDIS_URL": "redis://127.0.0.1:1/0"},
			"is it running?", "credentials"},
		{"postgres unreachable", map[string]string{"RUNSTREAM_POSTGRES_URL": "postgres://u:p@127.0.0.1:1/db?sslmode=disable&connect_timeout=2"},
			"is it running?", "credentials"},
	} {
		var out, errOut testenv.Buffer
		err := run(context.Background(), []string{"rebuild", "--all"}, func(k string) string { return tc.env[k] }, &out, &errOut)
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), tc.not) {
			t.Errorf("%s: err = %v, want %q and not %q", tc.name, err, tc.want, tc.not)
		}
		if out.String() != "" || errOut.String() != "" {
			t.Errorf("%s printed besides its error: %q %q", tc.name, out.String(), errOut.String())
		}
	}
}

// runstream lag names each member by client id, instance id and host, in
// text and JSON (the first format's fields kept), and a group that does
// not exist exits 1 with a message naming the groups that do.
func TestRun_LagMembersAndUnknownGroup(t *testing.T) {
	broker := testkafka.Start(t, kfake.SeedTopics(2, "run-events")).Brokers[0]
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	consumer, err := kgo.NewClient(kgo.SeedBrokers(broker), kgo.ConsumerGroup("g1"), kgo.ConsumeTopics("run-events"),
		kgo.ClientID("projector-a"), kgo.InstanceID("pod-a"))
	if err != nil {
		t.Fatal(err)
	}
	defer consumer.Close()
	// Poll until the group is stable with this member owning both partitions.
	var rep lag.Report
	testenv.WaitUntil(t, 20*time.Second, func() error {
		pctx, pcancel := context.WithTimeout(ctx, 200*time.Millisecond)
		consumer.PollFetches(pctx)
		pcancel()
		stdout, _, err := runCaptured(t, "lag", "--kafka-brokers", broker, "--group", "g1", "--json")
		if err != nil {
			return err
		}
		rep = lag.Report{}
		if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
			return err
		}
		if rep.State != "Stable" || len(rep.Partitions) != 2 || rep.Partitions[0].Owner == nil {
			return fmt.Errorf("group not settled: %s", stdout)
		}
		return nil
	})
	m := rep.MemberDetails
	if !rep.Exists || len(m) != 1 || m[0].ClientID != "projector-a" || m[0].InstanceID != "pod-a" || m[0].Host == "" || m[0].MemberID == "" {
		t.Fatalf("members %+v, want projector-a / pod-a with a host", m)
	}
	for _, p := range rep.Partitions {
		if p.Member != "projector-a" || *p.Owner != m[0] {
			t.Fatalf("partition %+v: want owner %+v and member (the first format's field) projector-a", p, m[0])
		}
	}
	stdout, _, err := runCaptured(t, "lag", "--kafka-brokers", broker, "--group", "g1")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"CLIENT ID", "projector-a", "pod-a", m[0].Host, m[0].MemberID, "#1 projector-a (pod-a)"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("text report lacks %q:\n%s", want, stdout)
		}
	}

	for _, args := range [][]string{{"--group", "g2"}, {"--group", "g2", "--json"}} {
		stdout, stderr, err := runCaptured(t, append([]string{"lag", "--kafka-brokers", broker}, args...)...)
		if err == nil || exitCode(err) != 1 || !strings.Contains(err.Error(), `consumer group "g2" does not exist`) ||
			!strings.Contains(err.Error(), "groups on these brokers: g1") {
			t.Errorf("lag %v: err = %v, want exit 1 saying g2 does not exist and g1 does", args, err)
		}
		if stderr != "" {
			t.Errorf("lag %v printed on stderr besides its error: %q", args, stderr)
		}
		asJSON := len(args) == 3
		if asJSON && !strings.Contains(stdout, `"exists": false`) {
			t.Errorf("lag %v: JSON report %q lacks \"exists\": false", args, stdout)
		}
		if !asJSON && stdout != "" {
			t.Errorf("lag %v: text printed besides the error: %q", args, stdout)
		}
	}
}

// TestLagGroupsFlag: by default the projector's group (--group) and the
// ETL's; a list replaces both, deduplicated, bounded.
func TestLagGroupsFlag(t *testing.T) {
	for _, tc := range []struct {
		raw, group string
		want       []string
	}{
		{"", "runstream-projector", []string{"runstream-projector", "runstream-etl"}},
		{"", "my-projectors", []string{"my-projectors", "runstream-etl"}},
		{" a, b ,a", "runstream-projector", []string{"a", "b"}},
	} {
		f := lagGroupsFlag{raw: tc.raw}
		got, err := f.groups(tc.group)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("--lag-groups %q --group %q = %v, %v; want %v", tc.raw, tc.group, got, err, tc.want)
		}
	}
	many := strings.Repeat("g,", maxLagGroups) + "last"
	for i := range maxLagGroups + 1 {
		many += fmt.Sprintf(",g%d", i)
	}
	if _, err := (&lagGroupsFlag{raw: many}).groups("p"); err == nil || !strings.Contains(err.Error(), "at most") {
		t.Errorf("%d groups accepted: %v", maxLagGroups+2, err)
	}
}
