// A producer the spool test kills with SIGKILL: it appends StepStarted
// events (fail-open) to three runs, three appends in flight at a time, to an
// API that cannot be reached, and prints one line per event once its append
// resolved, that is once it was durably spooled:
//   spooled <runId> <stepId>
// argv: spoolDir url token tenant runA runB runC
import { RunstreamClient } from "../src/index.js";

const [dir, url, token, tenant, ...runs] = process.argv.slice(2);
const c = new RunstreamClient({ url, token, spoolDir: dir, writeLatencyBudgetMs: 40, backoffBaseMs: 5 });
await c.start();
process.stdout.write("ready\n");

async function produce(runId: string) {
  for (let i = 0; ; i++) {
    const stepId = `s${i}`;
    const r = await c.append({
      eventType: "StepStarted",
      runId,
      stepId,
      tenantId: tenant,
      projectId: "proj",
      environmentId: "test",
      planId: "plan_ts",
      planVersion: "1",
      engineAttemptId: 1,
      logicalAttemptId: 1,
      payload: { note: "x".repeat(i % 200) },
    });
    if (!r.spooled) throw new Error(`expected the append to be spooled: ${JSON.stringify(r)}`);
    process.stdout.write(`spooled ${runId} ${stepId}\n`);
  }
}
await Promise.all(runs.map(produce));
