// DuckDB reads an archive that internal/archive wrote, with no runstream
// code: node check.mjs DIR, where DIR holds the files and expected.json
// (gen/main.go). It checks the schema DuckDB sees (persisted_at a real
// timestamp, run_seq a BIGINT, payload text), every row's columns against
// what was written (payload text byte for byte, nulls where the record had
// no step or payload), the per-tenant aggregate over the Hive layout, and
// that json_extract reads the payloads. The Hive column tenant is the
// path's %XX-escaped value, which DuckDB decodes back to the tenantId. Exits 1 on any difference.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { DuckDBInstance } from "@duckdb/node-api";

const dir = process.argv[2];
if (!dir) {
  console.error("usage: node check.mjs DIR");
  process.exit(2);
}
const expected = JSON.parse(readFileSync(join(dir, "expected.json"), "utf8"));
const glob = join(dir, "tenant=*", "date=*", "*.parquet");
const src = `read_parquet('${glob.replaceAll("'", "''")}', hive_partitioning = true)`;

let failed = 0;
let passed = 0;
function check(name, ok, detail) {
  if (ok) {
    passed++;
  } else {
    failed++;
    console.error(`FAIL ${name}${detail ? ": " + detail : ""}`);
  }
}
const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);

const db = await DuckDBInstance.create(":memory:");
const conn = await db.connect();
async function rows(sql) {
  const reader = await conn.runAndReadAll(sql);
  return reader.getRowObjectsJson();
}

// The types DuckDB gives the columns.
const described = await rows(`DESCRIBE SELECT * FROM ${src}`);
const types = Object.fromEntries(described.map((r) => [r.column_name, r.column_type]));
const wantTypes = {
  run_id: "VARCHAR", run_seq: "BIGINT", event_id: "VARCHAR", event_type: "VARCHAR",
  idempotency_key: "VARCHAR", tenant_id: "VARCHAR", project_id: "VARCHAR",
  environment_id: "VARCHAR", plan_id: "VARCHAR", plan_version: "VARCHAR",
  step_id: "VARCHAR", engine_attempt_id: "BIGINT", logical_attempt_id: "BIGINT",
  emitted_at: "VARCHAR", persisted_at: "TIMESTAMP WITH TIME ZONE", payload: "VARCHAR",
  tenant: "VARCHAR", date: "DATE",
};
for (const [col, want] of Object.entries(wantTypes)) {
  check(`column ${col} type`, types[col] === want, `DuckDB says ${types[col]}, want ${want}`);
}

// Every row, every column.
const got = await rows(`
  SELECT tenant AS tenant_hive, strftime(date, '%Y-%m-%d') AS date_hive,
         run_id, run_seq, event_id, event_type, idempotency_key, tenant_id,
         project_id, environment_id, plan_id, plan_version, step_id,
         engine_attempt_id, logical_attempt_id, emitted_at,
         epoch_us(persisted_at)::VARCHAR AS persisted_at_us,
         strftime(persisted_at AT TIME ZONE 'UTC', '%Y-%m-%dT%H:%M:%S.%fZ') AS persisted_at_text,
         payload
  FROM ${src}
  ORDER BY tenant_id, run_id, run_seq`);
const want = [...expected.rows].sort((a, b) =>
  a.tenant_id < b.tenant_id ? -1 : a.tenant_id > b.tenant_id ? 1 :
  a.run_id < b.run_id ? -1 : a.run_id > b.run_id ? 1 : Number(a.run_seq) - Number(b.run_seq));
check("row count", got.length === want.length, `DuckDB read ${got.length} rows, ${want.length} were written`);
for (let i = 0; i < Math.min(got.length, want.length); i++) {
  for (const col of Object.keys(want[i])) {
    check(`row ${i} (${want[i].event_id}) ${col}`, same(got[i][col], want[i][col]),
      `got ${JSON.stringify(got[i][col])}, want ${JSON.stringify(want[i][col])}`);
  }
}

// The per-tenant aggregate an operator would run.
const agg = await rows(`
  SELECT tenant_id, count(*) AS n, min(run_seq) AS min_run_seq,
         epoch_us(max(persisted_at))::VARCHAR AS max_persisted_at_us,
         count(payload) AS payloads
  FROM ${src} GROUP BY 1 ORDER BY 1`);
check("aggregate by tenant", same(agg, expected.tenants),
  `got ${JSON.stringify(agg)}, want ${JSON.stringify(expected.tenants)}`);

// The payload is JSON text DuckDB's json functions read, and persisted_at
// compares as a timestamp.
const js = await rows(`
  SELECT json_extract_string(payload, '$.k') AS k, (payload->'nested'->>'z') AS z
  FROM ${src} WHERE payload IS NOT NULL ORDER BY tenant_id, run_id, run_seq LIMIT 1`);
check("json_extract on payload", same(js, [{ k: "värde 1", z: "1" }]), JSON.stringify(js));
const ts = await rows(`
  SELECT count(*) AS n FROM ${src}
  WHERE persisted_at >= TIMESTAMPTZ '2026-11-27 09:30:00+00' AND persisted_at < TIMESTAMPTZ '2026-11-27 09:31:00+00'`);
const inMinute = expected.rows.filter((r) => r.persisted_at_text < "2026-11-27T09:31:00").length;
check("timestamp range filter", ts[0].n === String(inMinute), `got ${JSON.stringify(ts)}, want ${inMinute}`);

console.log(`duckdb: ${expected.files.length} files, ${got.length} rows`);
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
