// DuckDB runs docs/LAKE.md's queries on a lake that `runstream lake` wrote,
// with no runstream code: node lake.mjs DIR LAKE.md, where DIR holds the
// lake and expected-lake.json (TestLake_DuckDB: each query's answer
// computed from the store). Each ```sql block of the doc that starts with
// "-- lake-query: NAME" runs as written, the doc's example path
// /var/lib/runstream/lake replaced by DIR; the rows of its last statement
// must equal expected-lake.json's NAME. Exits 1 on any difference, or when
// the doc lost a query the test expects.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { DuckDBInstance } from "@duckdb/node-api";

const [dir, doc] = process.argv.slice(2);
if (!dir || !doc) {
  console.error("usage: node lake.mjs DIR LAKE.md");
  process.exit(2);
}
const expected = JSON.parse(readFileSync(join(dir, "expected-lake.json"), "utf8"));
const queries = new Map();
for (const m of readFileSync(doc, "utf8").matchAll(/```sql\n-- lake-query: ([a-z0-9-]+)\n([\s\S]*?)```/g)) {
  queries.set(m[1], m[2].replaceAll("/var/lib/runstream/lake", dir.replaceAll("'", "''")));
}

// canonical is rows as JSON with each row's keys sorted: rows and their
// order must agree, key order need not.
const canonical = (rows) =>
  JSON.stringify(rows.map((r) => Object.fromEntries(Object.keys(r).sort().map((k) => [k, r[k]]))));

const db = await DuckDBInstance.create(":memory:");
const conn = await db.connect();
let failed = 0;
for (const [name, want] of Object.entries(expected)) {
  const sql = queries.get(name);
  if (!sql) {
    console.error(`FAIL ${name}: no "-- lake-query: ${name}" block in ${doc}`);
    failed++;
    continue;
  }
  let got;
  for (const stmt of sql.split(/;\s*\n/).map((s) => s.trim()).filter(Boolean)) {
    got = (await conn.runAndReadAll(stmt)).getRowObjectsJson();
  }
  if (canonical(got) === canonical(want)) {
    console.log(`ok   ${name}: ${got.length} rows agree with the store`);
  } else {
    failed++;
    console.error(`FAIL ${name}:\n  DuckDB: ${JSON.stringify(got)}\n  store:  ${JSON.stringify(want)}`);
  }
}
console.log(`duckdb lake: ${Object.keys(expected).length - failed} queries agree, ${failed} differ`);
process.exit(failed === 0 ? 0 : 1);
