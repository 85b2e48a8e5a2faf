// Package chaos is runstream's end-to-end fault suite (`make chaos`). It has
// no code of its own outside its tests: TestChaos builds bin/runstream and
// runs the real binaries as separate processes (two APIs, two relays, two
// projectors, the ETL) against a private Postgres, a private Redis and a
// Kafka-protocol broker (franz-go's kfake in a process of its own, with a
// data directory, on a fixed port), drives realistic runs over HTTP with
// duplicate storms, and injects faults one after another while the load
// runs: kill -9 of each component (restarted at once), the broker killed,
// stopped, or refusing produce requests for some partitions, Postgres
// restarted or killed, Redis restarted empty while runs are idle.
//
// After the last fault it waits for the read side to converge and checks
// what every consumer holds against the Append Authority: every
// acknowledged event is in Postgres once, runSeq contiguous per run; every
// Redis snapshot equals the store's projection (GET
// /v1/runs/{runId}/snapshot?consistent=true) and is in its tenant's run
// index; the ETL's runs rows agree. It prints one verdict line on stdout:
//
//	chaos: PASS runs=412 events=3810 acked=3810 duplicates=600 faults=9 redis_mismatch=0 etl_mismatch=0 converged_after=7.4s
//
// `make test` (RUNSTREAM_TEST_REQUIRE=1) runs the short version, every
// fault once in about a minute and a half; RUNSTREAM_CHAOS=full (`make
// chaos`) runs the long one, with more load and every fault three times.
// Without either (make test-unit) it skips. Other settings:
//
//   - RUNSTREAM_CHAOS_CONVERGE replaces the convergence flags given to the
//     projectors and the ETL ("--converge-interval=1s --converge-grace=2s";
//     "--converge-interval=0" turns convergence off, to see the verdict
//     fail on Redis restarted empty and on dead-lettered tails);
//   - RUNSTREAM_CHAOS_KEEP_LOGS=1 keeps every process's log in
//     $RUNSTREAM_ARTIFACTS_DIR/chaos-<time> even when the run passes (a
//     failed run always keeps them there when the variable is set).
//
// The refusal fault is a real one: the broker process installs a kfake
// fault that answers produce requests to three partitions with
// INVALID_RECORD, and the relay runs with --relay-max-attempts=3 (and
// --retry-window=2s) so that it dead-letters events within seconds; runs
// on those partitions stop after their next event meanwhile, so some runs
// end with a dead-lettered tail that no later event reveals.
package chaos
