package harness

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestBenchParsePgbench(t *testing.T) {
	const out = `pgbench (15.18 (Debian 15.18-0+deb12u1))
transaction type: append_single.sql
scaling factor: 1
query mode: prepared
number of clients: 16
number of threads: 2
maximum number of tries: 1
duration: 3 s
number of transactions actually processed: 4723
number of failed transactions: 3 (0.064%)
latency average = 8.638 ms
initial connection time = 500.770 ms
tps = 1852.175748 (without initial connection time)
`
	tps, failed, err := ParsePgbench(out)
	if err != nil {
		t.Fatal(err)
	}
	if tps != 1852.175748 || failed != 3 {
		t.Errorf("ParsePgbench = %v tps, %d failed; want 1852.175748, 3", tps, failed)
	}
	if _, _, err := ParsePgbench("pgbench: error: connection refused\n"); err == nil {
		t.Error("ParsePgbench without a tps line: got no error")
	}
}

func TestBenchLibpqTarget(t *testing.T) {
	conninfo, env, err := LibpqTarget("postgres://u:s3cret@127.0.0.1:5432/db?sslmode=disable&pool_max_conns=32&search_path=x", "bench_1")
	if err != nil {
		t.Fatal(err)
	}
	if want := "postgres://u@127.0.0.1:5432/db?sslmode=disable"; conninfo != want {
		t.Errorf("conninfo = %q, want %q", conninfo, want)
	}
	if diff := cmp.Diff([]string{"PGOPTIONS=-c search_path=bench_1", "PGPASSWORD=s3cret"}, env); diff != "" {
		t.Errorf("env (-want +got):\n%s", diff)
	}
	kv := "host=127.0.0.1 dbname=db"
	if got, _, _ := LibpqTarget(kv, "s"); got != kv {
		t.Errorf("keyword/value conninfo = %q, want it unchanged", got)
	}
}
