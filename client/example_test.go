package client_test

import (
	"context"
	"os"
	"time"

	"github.com/runstream/runstream/client"
)

// stepInput is what a workflow hands the activity that runs one step.
type stepInput struct {
	RunID, PlanID, PlanVersion string
	// Attempt is the step's logical attempt, counted by the workflow.
	Attempt int64
}

// activityAttempt stands for the engine's own attempt counter (a Temporal
// activity's activity.GetInfo(ctx).Attempt).
func activityAttempt(context.Context) int32 { return 1 }

func extract(context.Context) (int, error) { return 3, nil }

// The example of client/README.md: a Temporal activity (or any worker)
// writing one step through the run handle.
func ExampleClient_Run() {
	rs, err := client.New(client.Config{URL: os.Getenv("RUNSTREAM_URL"), Token: os.Getenv("RUNSTREAM_TOKEN"), SpoolDir: "/var/lib/worker/runstream-spool"})
	if err != nil {
		return
	}
	defer rs.Close()

	activity := func(ctx context.Context, in stepInput) error {
		run := rs.Run(client.RunOptions{RunID: in.RunID, TenantID: "tenant_acme", ProjectID: "proj", EnvironmentID: "prod", PlanID: in.PlanID, PlanVersion: in.PlanVersion})
		step := run.Step("extract").SetAttempt(in.Attempt).SetEngineAttempt(int64(activityAttempt(ctx)))
		if _, err := step.Started(ctx); err != nil {
			return err
		}
		start := time.Now()
		rows, err := extract(ctx)
		if err != nil {
			_, _ = step.Failed(ctx, client.Failure{ErrorCode: "EXTRACT_FAILED", ErrorMessage: err.Error(), Retryable: true})
			return err
		}
		_, err = step.Completed(ctx, client.StepCompleted{Result: rows, DurationMs: new(time.Since(start).Milliseconds())})
		return err // not stored within the write-latency budget: fail the activity, its retry writes the same key
	}
	_ = activity
}

// Where a run starts (the code that starts the workflow, or the activity
// that writes RunStarted), its id is made once and handed to every step
// that writes to the run, as stepInput.RunID in the example above.
func ExampleNewRunID() {
	in := stepInput{RunID: client.NewRunID(), PlanID: "plan_daily_etl", PlanVersion: "3", Attempt: 1}
	_ = in
}
