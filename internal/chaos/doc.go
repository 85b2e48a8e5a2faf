// Package chaos is runstream's end-to-end fault suite (`make chaos`). It has
// no code of its own outside its tests: TestChaos builds bin/runstream and
// runs the real binaries as separate processes (two APIs, two relays, two
// projectors, the ETL) against a private Postgres primary with a
// synchronous streaming standby (the components get a multi-host URL with
// target_session_attrs=read-write), a private Redis primary with a replica
// under a Sentinel (the components get the Sentinel URL) and a
// Kafka-protocol broker (franz-go's kfake in a process of its own, with a
// data directory, on a fixed port), drives realistic runs over HTTP with
// duplicate storms, and injects faults one after another while the load
// runs: kill -9 of each component (restarted at once), the broker killed,
// stopped, or refusing produce requests for some partitions, Postgres
// restarted or killed, the Postgres primary killed and its standby
// promoted (failover), the Redis primary killed and its replica promoted
// by Sentinel, Redis restarted empty while runs are idle.
//
// TestChaos_Partitions (partition_test.go) runs api-0, relay-0 and
// projector-0 each in a network namespace of its own and cuts it from
// Postgres, the broker and Redis by dropping packets (sockets stay open):
// each must report unreadiness on /readyz, recover when the link heals,
// and lose nothing. TestChaos_AsyncFailover (make chaos only) runs the
// failover with an asynchronous standby and reports what it loses, with
// the verdict MEASURED.
//
// TestChaos_RetentionKill (retention_test.go) runs `runstream retention
// run` over a store whose old partition's runs all ended, and kills it
// with SIGKILL after each step of the partition's removal (retired,
// detached, a tenant's Parquet file written but not closed, uploaded, in
// the manifest, archived, dropped: the process kills itself exactly
// there when RUNSTREAM_KILL_AFTER_RETENTION_STEP names the step) and once
// while its DROP waits for a lock, restarting it each time. After every
// kill nothing is dropped that the manifest does not cover, no archive
// file under its final name is partial, each manifest row's file reads
// back as recorded, and every event is still readable; at the end export
// prints byte for byte what it printed before, and no local file of a
// killed pass is left.
//
// TestChaos_LakeKill (lake_test.go) runs `runstream lake` and kills it
// with SIGKILL after each step that makes its files durable (an event
// into an open window, a file uploaded before its window's commit, the
// commit before the Kafka offset, a current-state generation before and
// after its manifest swap: RUNSTREAM_KILL_AFTER_LAKE_STEP), restarting it
// each time with more runs on the topic. After every kill each event file
// reads back whole, no (runId, runSeq) is in two files and the manifest
// names only whole files; at the end every event is in the lake exactly
// once, the current-state table equals the reducer's projection, and
// DuckDB's answers to docs/LAKE.md's queries equal the store's.
//
// TestChaos_BrokerStop (broker_stop_test.go) appends at a steady rate
// (1,000 events/s under make chaos, 150 under make test) while the broker
// is stopped (3 minutes; 15 s in the short version), then starts it
// again: the outbox's backlog N must drain, every Redis snapshot equal to
// the store's projection, within N/R + 10 s of the broker's return, R
// being the projectors' rate over the half-seconds they spent working on
// it (so no more than 10 s may go to reconnecting, rejoining or idling).
// While the broker is away the API's
// runstream_freshness_oldest_unapplied_seconds for the projector group
// must grow to the stop's length, less one refresh of the lag exporter,
// and read under 10 s again once the read side caught up. Its verdict
// line gives the backlog, the drain time, the bound and the freshness
// peak.
//
// After the last fault it waits for the read side to converge and checks
// what every consumer holds against the Append Authority: every
// acknowledged event is in Postgres once, runSeq contiguous per run; every
// Redis snapshot equals the store's projection (GET
// /v1/runs/{runId}/snapshot?consistent=true) and is in its tenant's run
// index; the ETL's runs rows agree. It prints one verdict line on stdout:
//
//	chaos: PASS runs=310 events=4061 acked=4061 duplicates=2218 faults=12 redis_mismatch=0 etl_mismatch=0 converged_after=0.4s ... lost_acked=0 failover_unavailable=1.7s standby=sync mode=short wall=126s
//
// `make test` (RUNSTREAM_TEST_REQUIRE=1) runs the short version, every
// fault once in about a minute and a half; RUNSTREAM_CHAOS=full (`make
// chaos`) runs the long one, with more load and every fault three times
// (the Postgres failover once: there is one standby).
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
