// A stock KafkaJS consumer group against runstream (scripts/test-kafkajs.sh
// starts `runstream dev` and runs this). It appends RUNS runs of EVENTS
// events each through the HTTP API, then reads the topic from the start
// with a fresh consumer group, no codec plugins registered, and checks every
// record against docs/CONSUMERS.md:
//   - key = the runId's bytes, value = RunEventRecord JSON with that runId;
//   - headers eventType, eventId, runSeq, tenantId, content-type and
//     schema-version, equal to the value's fields;
//   - partition = murmur2(key) mod partitions, as KafkaJS's own default
//     partitioner computes it (so a KafkaJS producer keyed by runId agrees);
//   - every appended (runId, runSeq) arrives, a run's first occurrences in
//     runSeq order (duplicates are allowed: at least once).
// Environment: RUNSTREAM_KJS_API_URL, RUNSTREAM_KJS_TOKEN, RUNSTREAM_KJS_TENANT,
// RUNSTREAM_KJS_BROKERS, RUNSTREAM_KJS_TOPIC, RUNSTREAM_KJS_PARTITIONS.
import { createHash, randomUUID } from "node:crypto";
import kafkajs from "kafkajs";

const { Kafka, Partitioners, logLevel } = kafkajs;
const env = (k) => {
  const v = process.env[k];
  if (!v) throw new Error(`${k} is not set`);
  return v;
};
const api = env("RUNSTREAM_KJS_API_URL");
const token = env("RUNSTREAM_KJS_TOKEN");
const tenant = env("RUNSTREAM_KJS_TENANT");
const brokers = env("RUNSTREAM_KJS_BROKERS").split(",").filter((b) => b !== "");
const topic = env("RUNSTREAM_KJS_TOPIC");
const partitions = Number(env("RUNSTREAM_KJS_PARTITIONS"));
const RUNS = Number(process.env.RUNSTREAM_KJS_RUNS || 100);
const TYPES = ["RunStarted", "StepStarted", "StepCompleted", "RunCompleted"];
const deadline = Date.now() + Number(process.env.RUNSTREAM_KJS_TIMEOUT_MS || 25000);

function write(runId, eventType) {
  const ev = {
    eventId: randomUUID(), eventType, emittedAt: new Date().toISOString(), runId, tenantId: tenant,
    projectId: "proj", environmentId: "kafkajs", planId: "plan_kafkajs", planVersion: "1",
    engineAttemptId: 1, logicalAttemptId: 1,
  };
  if (eventType.startsWith("Step")) ev.stepId = "step-1";
  const pre = `${runId}|${ev.stepId || "RUN"}|1|${eventType}|${ev.planId}|${ev.planVersion}`;
  ev.idempotencyKey = createHash("sha256").update(pre, "utf8").digest("hex");
  return ev;
}

// Append: one batch per event type, so each run gets runSeq 1..4.
const expected = new Map(); // runId -> eventType by runSeq (1-based)
const runIds = Array.from({ length: RUNS }, () => randomUUID());
for (const t of TYPES) {
  const res = await fetch(`${api}/v1/events:batch`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
    body: JSON.stringify({ events: runIds.map((r) => write(r, t)) }),
  });
  const body = await res.json();
  if (res.status !== 200) throw new Error(`append ${t}: HTTP ${res.status} ${JSON.stringify(body)}`);
  body.results.forEach((r, i) => {
    if (r.error || !r.runSeq) throw new Error(`append ${t} for ${runIds[i]}: ${JSON.stringify(r)}`);
    if (!expected.has(runIds[i])) expected.set(runIds[i], []);
    expected.get(runIds[i])[r.runSeq - 1] = t;
  });
}
const total = RUNS * TYPES.length;

const partitioner = Partitioners.DefaultPartitioner();
const partitionMetadata = Array.from({ length: partitions }, (_, i) => ({ partitionId: i, leader: 0 }));
const header = (m, k) => (m.headers[k] === undefined ? undefined : m.headers[k].toString("utf8"));

const failures = [];
const fail = (msg) => { if (failures.length < 20) failures.push(msg); };
const seen = new Map(); // runId -> highest runSeq seen in order
let records = 0, ours = 0, duplicates = 0;

// KafkaJS logs a fetch it cannot decode (an unknown codec) and retries it
// for ever; the first such error is kept for the failure message.
let lastError = "";
const logCreator = () => ({ level, log }) => {
  if (level <= logLevel.ERROR && !lastError) lastError = `${log.message}${log.error ? ": " + log.error : ""}`;
};
const kafka = new Kafka({ clientId: "runstream-kafkajs-interop", brokers, logLevel: logLevel.ERROR, logCreator });
const consumer = kafka.consumer({ groupId: `runstream-kafkajs-${randomUUID()}` });
await consumer.connect();
await consumer.subscribe({ topics: [topic], fromBeginning: true });
let done;
const finished = new Promise((resolve) => { done = resolve; });
await consumer.run({
  eachMessage: async ({ partition, message: m }) => {
    records++;
    const key = m.key === null ? null : m.key.toString("utf8");
    let v;
    try {
      v = JSON.parse(m.value.toString("utf8"));
    } catch (e) {
      fail(`partition ${partition} offset ${m.offset}: value is not JSON: ${e.message}`);
      return;
    }
    if (!expected.has(v.runId)) return; // another run on a shared topic
    ours++;
    const at = `run ${v.runId} runSeq ${v.runSeq} (partition ${partition} offset ${m.offset})`;
    if (key !== v.runId) fail(`${at}: key ${JSON.stringify(key)} is not the value's runId`);
    const want = partitioner({ topic, partitionMetadata, message: { key: m.key } });
    if (partition !== want) fail(`${at}: on partition ${partition}, KafkaJS's default partitioner says ${want}`);
    for (const [h, w] of [["eventType", v.eventType], ["eventId", v.eventId], ["runSeq", String(v.runSeq)],
      ["tenantId", v.tenantId], ["content-type", "application/json"], ["schema-version", "2.0.0"]]) {
      if (header(m, h) !== w) fail(`${at}: header ${h} = ${JSON.stringify(header(m, h))}, want ${JSON.stringify(w)}`);
    }
    for (const f of ["eventId", "eventType", "runId", "tenantId", "persistedAt", "idempotencyKey"]) {
      if (typeof v[f] !== "string" || v[f] === "") fail(`${at}: value field ${f} missing`);
    }
    if (!Number.isInteger(v.runSeq) || v.runSeq < 1) fail(`${at}: runSeq ${v.runSeq} is not a positive integer`);
    if (v.tenantId !== tenant) fail(`${at}: tenantId ${v.tenantId}, want ${tenant}`);
    const types = expected.get(v.runId);
    if (types[v.runSeq - 1] !== v.eventType) fail(`${at}: eventType ${v.eventType}, appended ${types[v.runSeq - 1]}`);
    const last = seen.get(v.runId) || 0;
    if (v.runSeq <= last) duplicates++;
    else if (v.runSeq === last + 1) seen.set(v.runId, v.runSeq);
    else fail(`${at}: came after runSeq ${last} (a hole)`);
    let complete = 0;
    for (const s of seen.values()) complete += s;
    if (complete === total) done();
  },
});
const timer = setTimeout(done, Math.max(deadline - Date.now(), 0));
await finished;
clearTimeout(timer);
// A consumer stuck on a record it cannot read may not leave in time.
await Promise.race([consumer.disconnect(), new Promise((r) => setTimeout(r, 3000))]);

let got = 0;
for (const s of seen.values()) got += s;
if (got !== total) fail(`read ${got} of ${total} appended events in order before the deadline (${records} records read${lastError ? "; KafkaJS said: " + lastError : ""})`);
if (failures.length > 0) {
  console.error(`kafkajs: ${failures.length} failure(s):\n  ` + failures.join("\n  "));
  process.exit(1);
}
console.log(`kafkajs: ${ours} records of ${RUNS} runs read by a stock KafkaJS consumer group, ${duplicates} duplicates; key, headers, value and partition (murmur2 mod ${partitions}) match the contract`);
process.exit(0);
