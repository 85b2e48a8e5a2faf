// What the tests share: the real API that scripts/test-typescript.sh
// starts (RUNSTREAM_TS_API_URL, with RUNSTREAM_AUTH_TOKENS so the tenant
// path is exercised), event factories and raw HTTP.
import { randomUUID } from "node:crypto";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";

import { idempotencyKey, type EventInput } from "../src/index.js";

/** clients/typescript, from dist/test. */
export const packageDir = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");
export const repoDir = resolve(packageDir, "..", "..");
/** Copies of data from outside the repository (testdata/README.md). */
export const testdataDir = join(repoDir, "testdata");

function need(name: string): string {
  const v = process.env[name];
  if (!v) {
    throw new Error(`${name} is not set: run the tests through scripts/test-typescript.sh, which starts a real runstream api`);
  }
  return v;
}

export const api = {
  get url() {
    return need("RUNSTREAM_TS_API_URL");
  },
  get token() {
    return need("RUNSTREAM_TS_TOKEN");
  },
  get tenant() {
    return need("RUNSTREAM_TS_TENANT");
  },
  get otherToken() {
    return need("RUNSTREAM_TS_OTHER_TOKEN");
  },
};

/** A URL nothing listens on: connections are refused at once. */
export const unreachable = "http://127.0.0.1:1";

export const STEP_TYPES = new Set(["StepStarted", "StepCompleted", "StepFailed", "StepSkipped"]);

/** A valid event of eventType for runId, without eventId/emittedAt/idempotencyKey (the client fills them). */
export function input(runId: string, eventType: string, stepId = "step-1", extra: Record<string, unknown> = {}): EventInput {
  const ev: Record<string, unknown> = {
    eventType,
    runId,
    tenantId: api.tenant,
    projectId: "proj",
    environmentId: "test",
    planId: "plan_ts",
    planVersion: "1",
    engineAttemptId: 1,
    logicalAttemptId: 1,
    ...extra,
  };
  if (STEP_TYPES.has(eventType)) ev.stepId = stepId;
  // eventType is any string here (tests send the contract's types and
  // invalid ones alike); test-types/ checks the typed union itself.
  return ev as unknown as EventInput;
}

/** A complete valid RunEventWrite, key included. */
export function full(runId: string, eventType: string, stepId = "step-1"): Record<string, unknown> {
  const ev: Record<string, unknown> = {
    eventId: randomUUID(),
    emittedAt: "2026-02-16T10:30:00.123Z",
    ...input(runId, eventType, stepId),
  };
  ev.idempotencyKey = idempotencyKey(ev as Parameters<typeof idempotencyKey>[0]);
  return ev;
}

export function newRun(): string {
  return randomUUID();
}

/** POSTs body as is; returns the status and the parsed answer. */
export async function postRaw(path: string, body: string, token = api.token): Promise<{ status: number; body: any }> {
  const res = await fetch(api.url + path, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
    body,
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null };
}

/** The run's stored events in runSeq order. */
export async function events(runId: string): Promise<any[]> {
  const out: any[] = [];
  let after = 0;
  for (;;) {
    const res = await fetch(`${api.url}/v1/runs/${runId}/events?afterSeq=${after}&limit=1000`, {
      headers: { authorization: `Bearer ${api.token}` },
    });
    if (res.status === 404) return out;
    if (res.status !== 200) throw new Error(`reading run ${runId}: ${res.status} ${await res.text()}`);
    const page = (await res.json()) as { events: any[] };
    if (page.events.length === 0) return out;
    out.push(...page.events);
    after = page.events[page.events.length - 1].runSeq;
  }
}

export async function tempDir(t: { after: (fn: () => Promise<void>) => void }): Promise<string> {
  const d = await mkdtemp(join(tmpdir(), "runstream-ts-"));
  t.after(() => rm(d, { recursive: true, force: true }));
  return d;
}

/**
 * A fetch to the real API that, while down() is true, answers like an API
 * whose store is away: 503 with a Retry-After of a minute, past any test's
 * budget, so the client gives up at once.
 */
export function switchableFetch(down: () => boolean): { fetch: typeof fetch; calls: () => number } {
  let calls = 0;
  const f: typeof fetch = async (input, init) => {
    calls++;
    if (down()) {
      return new Response(JSON.stringify({ error: { code: "UNAVAILABLE", message: "down for the test" } }), {
        status: 503,
        headers: { "content-type": "application/json", "retry-after": "60" },
      });
    }
    return fetch(input, init);
  };
  return { fetch: f, calls: () => calls };
}

/**
 * The budget of clients that talk to the real API in tests not about the
 * budget: generous, so a loaded machine (make test runs beside everything
 * else) cannot turn a slow answer into a spooled or refused event.
 */
export const SLOW_OK = 30_000;
