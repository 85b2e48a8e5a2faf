// The README's first example, as it is there but for the Temporal import
// (declared here: the Temporal SDK is not a dependency): it must compile.
import { RunstreamClient } from "../src/index.js";
declare const Context: { current(): { info: { attempt: number } } };
declare function doExtract(): Promise<number>;

// Once per process: StepStarted fails open into the spool while the API is away.
const rs = new RunstreamClient({ url: process.env.RUNSTREAM_URL!, token: process.env.RUNSTREAM_TOKEN, spoolDir: "/var/lib/worker/runstream-spool" });
await rs.start();

// Per step (input.attempt: the step's attempt by the plan, counted by the workflow).
export async function extract(input: { runId: string; planId: string; planVersion: string; attempt: number }) {
  const run = rs.run({ runId: input.runId, tenantId: "tenant_acme", projectId: "proj", environmentId: "prod", planId: input.planId, planVersion: input.planVersion });
  const step = run.step("extract", { logicalAttemptId: input.attempt, engineAttemptId: Context.current().info.attempt });
  await step.started();
  const t0 = Date.now();
  const rows = await doExtract().catch(async (e) => { await step.failed({ errorCode: "EXTRACT_FAILED", errorMessage: String(e) }, { retryable: true }); throw e; });
  await step.completed({ result: { rows }, durationMs: Date.now() - t0 }); // rejects past the budget: the activity fails and is retried, same key
}
