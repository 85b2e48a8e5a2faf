// Local validation of a RunEventWrite, reaching the verdict the API reaches
// and reporting the same field and message (store/validate in the Go tree:
// validate.go, text.go, schema.go and the JSON Schemas in
// store/validate/schemas). An event the API would refuse is refused here,
// never sent and never spooled. The three steps are the API's:
//
//  1. text: no string of the event (the known members; in the payload every
//     member name and string) holds U+0000 or an unpaired surrogate;
//  2. the JSON Schema of the event type: the envelope, the step/run rule for
//     stepId, the payload fields RunEvents v1 section 4.3 types; when
//     several members fail, the earliest in FIELD_ORDER is reported;
//  3. what a schema cannot state: identifiers are at most 255 bytes of
//     UTF-8, and idempotencyKey equals the key of the event.
//
// The event is judged as JSON.stringify would send it: undefined members
// are absent, NaN and Infinity are null.

import { RunstreamError } from "./errors.js";
import { IDEMPOTENCY_KEY_FORMULA, idempotencyKey } from "./key.js";

/** Run-level event types validated strictly (they carry no stepId). */
export const RUN_EVENT_TYPES = [
  "RunQueued",
  "RunApproved",
  "RunStarted",
  "RunPaused",
  "RunResumed",
  "RunCompleted",
  "RunFailed",
  "RunCancelled",
] as const;

/** Step-level event types validated strictly (they need a stepId). */
export const STEP_EVENT_TYPES = ["StepStarted", "StepCompleted", "StepFailed", "StepSkipped"] as const;

const FIELD_ORDER = [
  "eventId",
  "eventType",
  "emittedAt",
  "runId",
  "tenantId",
  "projectId",
  "environmentId",
  "planId",
  "planVersion",
  "stepId",
  "engineAttemptId",
  "logicalAttemptId",
  "idempotencyKey",
  "payload",
] as const;
const RANK = new Map<string, number>(FIELD_ORDER.map((f, i) => [f, i + 1]));
const REQUIRED = FIELD_ORDER.filter((f) => f !== "stepId" && f !== "payload");
const IDENTIFIERS = ["runId", "tenantId", "projectId", "environmentId", "planId", "planVersion", "stepId"];
const MAX_IDENTIFIER_BYTES = 255;
const MAX_ATTEMPT = 2147483647;
const UUID_V4 = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-4[0-9a-fA-F]{3}-[89abAB][0-9a-fA-F]{3}-[0-9a-fA-F]{12}$/;
const PASCAL = /^[A-Z][A-Za-z0-9]*$/;
const KEY_RE = /^[0-9a-f]{64}$/;

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

function invalid(field: string, message: string, prefix: string): RunstreamError {
  return new RunstreamError("SCHEMA_VALIDATION_FAILED", 400, message, { field: prefix + field, local: true });
}

/**
 * Validates one event as the API does and returns the error it would
 * answer (code SCHEMA_VALIDATION_FAILED, status 400, its field and message),
 * or null when the API would accept it. fieldPrefix is "events[3]." for an
 * item of a batch, as the batch answer names it.
 */
export function validateEvent(event: unknown, fieldPrefix = ""): RunstreamError | null {
  if (typeof event !== "object" || event === null || Array.isArray(event)) {
    return invalid("body", `body must be one JSON object holding a RunEventWrite, got ${kindOf(event)}`, fieldPrefix);
  }
  const doc = new Map<string, Json>();
  const unknown: string[] = [];
  for (const [k, v] of Object.entries(event as Record<string, unknown>)) {
    const j = toJson(v);
    if (j === undefined) continue;
    if (RANK.has(k)) doc.set(k, j);
    else unknown.push(k);
  }
  unknown.sort();
  const e = checkText(doc) ?? checkSchema(doc, unknown) ?? checkRules(doc);
  return e === null ? null : invalid(e.field, e.message, fieldPrefix);
}

interface Problem {
  field: string;
  message: string;
}

// toJson converts a value to what its JSON.stringify text parses back to
// (undefined: the member is left out).
function toJson(v: unknown): Json | undefined {
  switch (typeof v) {
    case "undefined":
    case "function":
    case "symbol":
      return undefined;
    case "number":
      return Number.isFinite(v) ? v : null;
    case "string":
    case "boolean":
      return v;
    case "bigint":
      throw new TypeError("a BigInt cannot be sent as JSON; use a number");
  }
  if (v === null) return null;
  const withJSON = v as { toJSON?: () => unknown };
  if (typeof withJSON.toJSON === "function") return toJson(withJSON.toJSON());
  if (Array.isArray(v)) return v.map((x) => toJson(x) ?? null);
  const out: { [k: string]: Json } = {};
  for (const [k, x] of Object.entries(v as Record<string, unknown>)) {
    const j = toJson(x);
    if (j !== undefined) out[k] = j;
  }
  return out;
}

function isObject(v: Json | undefined): v is { [k: string]: Json } {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

// ---- step 1: NUL and unpaired surrogates -------------------------------

// badUnit returns the index of the first code unit of s that is U+0000 or
// an unpaired surrogate, -1 when none is.
function badUnit(s: string): number {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c === 0) return i;
    if (c >= 0xd800 && c <= 0xdbff) {
      const n = i + 1 < s.length ? s.charCodeAt(i + 1) : 0;
      if (n >= 0xdc00 && n <= 0xdfff) {
        i++;
        continue;
      }
      return i;
    }
    if (c >= 0xdc00 && c <= 0xdfff) return i;
  }
  return -1;
}

function hasBadText(v: Json): boolean {
  if (typeof v === "string") return badUnit(v) >= 0;
  if (Array.isArray(v)) return v.some(hasBadText);
  if (isObject(v)) {
    for (const [k, x] of Object.entries(v)) if (badUnit(k) >= 0 || hasBadText(x)) return true;
  }
  return false;
}

function checkText(doc: Map<string, Json>): Problem | null {
  for (const f of FIELD_ORDER) {
    const v = doc.get(f);
    if (v !== undefined && hasBadText(v)) return textError(f, v);
  }
  return null;
}

// textError locates the first bad string of v, at path, as the API's
// escapeError walks it: members in order, a member's name before its value.
function textError(path: string, v: Json): Problem {
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) if (hasBadText(v[i])) return textError(`${path}[${i}]`, v[i]);
  } else if (isObject(v)) {
    for (const [k, x] of Object.entries(v)) {
      if (badUnit(k) >= 0) return badTextProblem(path, k, true);
      if (hasBadText(x)) return textError(`${path}.${k}`, x);
    }
  }
  return badTextProblem(path, v as string, false);
}

function badTextProblem(field: string, s: string, inKey: boolean): Problem {
  const where = inKey ? `${field} has a member name holding` : `${field} holds`;
  const c = s.charCodeAt(badUnit(s));
  if (c === 0) {
    return {
      field,
      message: `${where} U+0000 (NUL, \\u0000), which no string of an event may hold: Postgres cannot cast it to jsonb and many JSON parsers refuse it; remove it, or encode binary data (base64)`,
    };
  }
  return {
    field,
    message: `${where} an unpaired UTF-16 surrogate (\\u${c.toString(16).padStart(4, "0")}): a high surrogate (\\uD800-\\uDBFF) must be followed by a low one (\\uDC00-\\uDFFF); send valid Unicode text`,
  };
}

// ---- step 2: the schema ------------------------------------------------

function checkSchema(doc: Map<string, Json>, unknown: string[]): Problem | null {
  const et = doc.get("eventType");
  const known = typeof et === "string" ? knownKind(et) : undefined;
  const missing = REQUIRED.filter((f) => !doc.has(f));
  for (const f of FIELD_ORDER) {
    const v = doc.get(f);
    if (v === undefined) {
      if (missing.includes(f as (typeof REQUIRED)[number])) return requiredError(f, missing, unknown, "");
      if (f === "stepId" && known === "step") return requiredError("stepId", ["stepId"], unknown, et as string);
      continue;
    }
    const p = checkMember(f, v, doc, known);
    if (p !== null) return p;
  }
  return null;
}

function knownKind(t: string): "run" | "step" | undefined {
  if ((STEP_EVENT_TYPES as readonly string[]).includes(t)) return "step";
  if ((RUN_EVENT_TYPES as readonly string[]).includes(t)) return "run";
  return undefined;
}

function requiredError(missing: string, all: string[], unknown: string[], stepEventType: string): Problem {
  let msg =
    missing === "stepId"
      ? `stepId is required for step event ${stepEventType}; send the id of the step the event is about`
      : `${missing} is required in every RunEventWrite`;
  const u = unknown.find((x) => x.toLowerCase() === missing.toLowerCase());
  if (u !== undefined) msg += ` (the body has ${goQuote(u)}: field names are case-sensitive)`;
  const others = all.filter((m) => m !== missing);
  if (others.length > 0) msg += "; also missing: " + others.join(", ");
  return { field: missing, message: msg };
}

function checkMember(f: string, v: Json, doc: Map<string, Json>, known: "run" | "step" | undefined): Problem | null {
  switch (f) {
    case "eventId":
      if (typeof v !== "string") return { field: f, message: `eventId must be a string holding a UUID v4, got ${describe(v)}` };
      return UUID_V4.test(v) ? null : eventIdError(v);
    case "eventType":
      if (typeof v !== "string") return { field: f, message: `eventType must be a string such as "RunStarted", got ${describe(v)}` };
      return PASCAL.test(v) ? null : eventTypeError(v);
    case "emittedAt":
      if (typeof v !== "string") {
        return { field: f, message: `emittedAt must be a string holding an RFC 3339 date-time, got ${describe(v)}` };
      }
      return isRFC3339(v) ? null : dateTimeError(f, v);
    case "stepId":
      if (known === "run") {
        return {
          field: f,
          message: `${doc.get("eventType")} is a run-level event and must not have a stepId; remove stepId, or use a step event type (${STEP_EVENT_TYPES.join(", ")})`,
        };
      }
      return identifierCheck(f, v);
    case "engineAttemptId":
    case "logicalAttemptId":
      return typeof v === "number" && Number.isInteger(v) && v >= 1 && v <= MAX_ATTEMPT ? null : attemptError(f, v);
    case "idempotencyKey":
      if (typeof v !== "string") {
        return { field: f, message: `idempotencyKey must be a string, got ${describe(v)}; compute it as ${IDEMPOTENCY_KEY_FORMULA}` };
      }
      return KEY_RE.test(v) ? null : keyMismatch(expectedKey(doc), v);
    case "payload":
      return checkPayload(v, doc.get("eventType"));
    default:
      return identifierCheck(f, v);
  }
}

function identifierCheck(f: string, v: Json): Problem | null {
  if (typeof v !== "string") return { field: f, message: `${f} must be a string, got ${describe(v)}` };
  if (v === "") return { field: f, message: `${f} must not be empty (1-255 bytes)` };
  let cps = 0;
  let bad = false;
  for (const ch of v) {
    cps++;
    const r = ch.codePointAt(0)!;
    if (r === 0x7c || r < 0x20 || (r >= 0x7f && r <= 0x9f)) bad = true;
  }
  if (!bad && cps <= MAX_IDENTIFIER_BYTES) return null;
  // The API's identifierError, in its order.
  const bytes = Buffer.byteLength(v, "utf8");
  if (bytes > MAX_IDENTIFIER_BYTES) return identifierTooLong(f, bytes);
  const pipe = v.indexOf("|");
  if (pipe >= 0) {
    return {
      field: f,
      message: `${f} ${goQuote(shorten(v))} contains "|" at byte ${Buffer.byteLength(v.slice(0, pipe), "utf8")}; "|" is the idempotency key separator and is not allowed in identifiers: remove or replace it`,
    };
  }
  let at = 0;
  for (const ch of v) {
    const r = ch.codePointAt(0)!;
    if (r < 0x20 || (r >= 0x7f && r <= 0x9f)) {
      return {
        field: f,
        message: `${f} ${goQuote(shorten(v))} contains control character U+${r.toString(16).toUpperCase().padStart(4, "0")} at byte ${at}; identifiers must be printable`,
      };
    }
    at += Buffer.byteLength(ch, "utf8");
  }
  return { field: f, message: `${f} ${goQuote(shorten(v))} is not an identifier: 1-255 bytes, printable, no "|"` };
}

function identifierTooLong(f: string, bytes: number): Problem {
  return { field: f, message: `${f} must be at most ${MAX_IDENTIFIER_BYTES} bytes, got ${bytes} bytes; shorten it` };
}

function attemptError(f: string, v: Json): Problem {
  let msg = `${f} must be an integer >= 1 (at most ${MAX_ATTEMPT}), got ${describe(v)}`;
  if (typeof v === "string") msg += "; send it as a JSON number, without quotes";
  return { field: f, message: msg };
}

function keyMismatch(want: string, got: string): Problem {
  return {
    field: "idempotencyKey",
    message: `idempotencyKey does not match this event: expected ${want}, received ${goQuote(shorten(got))}; compute it as ${IDEMPOTENCY_KEY_FORMULA}`,
  };
}

function expectedKey(doc: Map<string, Json>): string {
  const s = (k: string) => {
    const v = doc.get(k);
    return typeof v === "string" ? v : "";
  };
  return idempotencyKey({
    runId: s("runId"),
    stepId: s("stepId"),
    logicalAttemptId: doc.get("logicalAttemptId") as number,
    eventType: s("eventType"),
    planId: s("planId"),
    planVersion: s("planVersion"),
  });
}

const UUID_EXAMPLE = "for example 3f1c2a4e-8b7d-4c6a-9e2f-1a2b3c4d5e6f";

function eventIdError(s: string): Problem {
  if (
    s.length === 36 &&
    Buffer.byteLength(s) === 36 &&
    s[8] === "-" &&
    s[13] === "-" &&
    s[18] === "-" &&
    s[23] === "-" &&
    /^[0-9a-fA-F]{8}.[0-9a-fA-F]{4}.[0-9a-fA-F]{4}.[0-9a-fA-F]{4}.[0-9a-fA-F]{12}$/.test(s)
  ) {
    if (s[14] !== "4") {
      return { field: "eventId", message: `eventId ${goQuote(s)} is a version ${s[14]} UUID; it must be a random UUID v4 (${UUID_EXAMPLE})` };
    }
    return {
      field: "eventId",
      message: `eventId ${goQuote(s)} does not have the RFC 4122 variant (8, 9, a or b at position 20); it must be a UUID v4 (${UUID_EXAMPLE})`,
    };
  }
  return { field: "eventId", message: `eventId must be a UUID v4 in 8-4-4-4-12 hex form (${UUID_EXAMPLE}), got ${describe(s)}` };
}

function eventTypeError(s: string): Problem {
  if (s === "") return { field: "eventType", message: `eventType must not be empty; use a PascalCase type such as "RunStarted"` };
  let msg = `eventType ${goQuote(shorten(s))} must be PascalCase (letters and digits, starting with an uppercase letter)`;
  const sug = suggestEventType(s);
  if (sug !== "") {
    if (hasOnPrefix(s)) msg += ` without the "on" prefix: use ${goQuote(sug)}`;
    else msg += `: use ${goQuote(sug)}`;
  } else {
    msg += `, such as "RunStarted"`;
  }
  return { field: "eventType", message: msg };
}

function hasOnPrefix(s: string): boolean {
  return s.length > 2 && s.startsWith("on") && s[2] >= "A" && s[2] <= "Z";
}

function suggestEventType(s: string): string {
  if (hasOnPrefix(s)) s = s.slice(2);
  let out = "";
  let upper = true;
  for (const ch of s) {
    if (ch >= "a" && ch <= "z") {
      out += upper ? ch.toUpperCase() : ch;
      upper = false;
    } else if ((ch >= "A" && ch <= "Z") || (ch >= "0" && ch <= "9")) {
      out += ch;
      upper = false;
    } else if (ch === "_" || ch === "-" || ch === " " || ch === ".") {
      upper = true;
    } else {
      return "";
    }
  }
  if (out === "" || out[0] < "A" || out[0] > "Z") return "";
  for (const t of [...RUN_EVENT_TYPES, ...STEP_EVENT_TYPES]) if (t.toLowerCase() === out.toLowerCase()) return t;
  return out;
}

function dateTimeError(field: string, v: Json): Problem {
  return {
    field,
    message: `${field} must be an RFC 3339 date-time with a zone, such as "2026-02-16T10:30:00.123Z" or "2026-02-16T11:30:00+01:00" (uppercase T and Z, seconds 00-59), got ${describe(v)}`,
  };
}

/**
 * isRFC3339 reports whether s is a date-time the API accepts: RFC 3339
 * section 5.6 with an uppercase T and Z, any number of fraction digits,
 * seconds 00-59, an offset within +-23:59, and a real calendar day.
 */
export function isRFC3339(s: string): boolean {
  const m = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(\.\d+)?(Z|[+-](\d{2}):(\d{2}))$/.exec(s);
  if (m === null) return false;
  const [year, month, day, hour, min, sec] = m.slice(1, 7).map(Number);
  if (m[9] !== undefined && (Number(m[9]) > 23 || Number(m[10]) > 59)) return false;
  if (month < 1 || month > 12 || hour > 23 || min > 59 || sec > 59) return false;
  const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
  const days = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1];
  return day >= 1 && day <= days;
}

// The payload: an object; its typed members per event type (the payload
// parts of store/validate/schemas). The failure reported is the first by
// location, then by keyword (required before type before the others), as
// the API's bestLeaf picks it.

interface Leaf {
  loc: string[];
  prio: number;
  problem: Problem;
}

type Rule = (v: Json, loc: string[], out: Leaf[]) => void;

const path = (loc: string[]) =>
  loc.reduce((acc, t) => (/^\d+$/.test(t) && acc !== "" ? `${acc}[${t}]` : acc === "" ? t : `${acc}.${t}`), "");

function typeRule(want: "string" | "number" | "integer" | "object" | "boolean" | "array"): Rule {
  return (v, loc, out) => {
    if (!hasType(v, want)) {
      const art = want === "integer" || want === "object" || want === "array" ? "an" : "a";
      out.push({ loc, prio: 2, problem: { field: path(loc), message: `${path(loc)} must be ${art} ${want}, got ${describe(v)}` } });
    }
  };
}

function hasType(v: Json, want: string): boolean {
  switch (want) {
    case "string":
      return typeof v === "string";
    case "number":
      return typeof v === "number";
    case "integer":
      return typeof v === "number" && Number.isInteger(v);
    case "boolean":
      return typeof v === "boolean";
    case "array":
      return Array.isArray(v);
    default:
      return isObject(v);
  }
}

function all(...rules: Rule[]): Rule {
  return (v, loc, out) => rules.forEach((r) => r(v, loc, out));
}

const minimum0: Rule = (v, loc, out) => {
  if (typeof v === "number" && v < 0) {
    out.push({ loc, prio: 3, problem: { field: path(loc), message: `${path(loc)} must be >= 0, got ${describe(v)}` } });
  }
};

const dateTime: Rule = all(typeRule("string"), (v, loc, out) => {
  if (typeof v === "string" && !isRFC3339(v)) out.push({ loc, prio: 3, problem: dateTimeError(path(loc), v) });
});

function props(members: Record<string, Rule>, required: string[] = [], requiredMessage?: string): Rule {
  return (v, loc, out) => {
    if (!isObject(v)) return;
    const missing = required.filter((r) => !(r in v)).sort();
    if (missing.length > 0) {
      const field = path([...loc, missing[0]]);
      out.push({ loc: [...loc, missing[0]], prio: 1, problem: { field, message: `${field} is required${requiredMessage ?? ""}` } });
    }
    for (const [k, rule] of Object.entries(members)) if (k in v) rule(v[k], [...loc, k], out);
  };
}

const artifactRef: Rule = all(
  typeRule("object"),
  props(
    {
      uri: all(typeRule("string"), (v, loc, out) => {
        if (v === "") out.push({ loc, prio: 3, problem: { field: path(loc), message: `${path(loc)} must not be empty` } });
      }),
      kind: typeRule("string"),
      sha256: typeRule("string"),
      sizeBytes: all(typeRule("integer"), minimum0),
      expiresAt: dateTime,
    },
    ["uri", "kind"],
    ": every artifact reference needs a non-empty uri and a kind",
  ),
);

const artifacts: Rule = all(typeRule("array"), (v, loc, out) => {
  if (Array.isArray(v)) v.forEach((x, i) => artifactRef(x, [...loc, String(i)], out));
});

const CATEGORIES = ["USER", "SYSTEM", "PLATFORM", "TIMEOUT"];
const failure: Record<string, Rule> = {
  errorCode: typeRule("string"),
  errorMessage: typeRule("string"),
  retryable: typeRule("boolean"),
  stack: typeRule("string"),
  failureCategory: (v, loc, out) => {
    if (typeof v !== "string" || !CATEGORIES.includes(v)) {
      out.push({
        loc,
        prio: 3,
        problem: { field: path(loc), message: `${path(loc)} must be one of ${CATEGORIES.join(", ")}, got ${describe(v)}` },
      });
    }
  },
  failureSource: typeRule("string"),
};
const signal: Record<string, Rule> = { signalId: typeRule("string"), reason: typeRule("string"), substatus: typeRule("string") };

const PAYLOAD_RULES: Record<string, Record<string, Rule>> = {
  RunStarted: {
    engineRunRef: typeRule("string"),
    engineType: typeRule("string"),
    startedAt: dateTime,
    planRef: typeRule("object"),
    context: typeRule("object"),
  },
  RunCompleted: { artifacts },
  RunFailed: failure,
  RunPaused: signal,
  RunResumed: signal,
  StepCompleted: { durationMs: all(typeRule("number"), minimum0), artifacts },
  StepFailed: { ...failure, artifacts },
  StepSkipped: { reason: typeRule("string"), reasonCode: typeRule("string") },
};

function checkPayload(v: Json, eventType: Json | undefined): Problem | null {
  if (!isObject(v)) {
    return { field: "payload", message: `payload must be a JSON object when present, got ${describe(v)}; omit payload or send an object such as {}` };
  }
  const leaves: Leaf[] = [];
  props({ sourceOccurredAt: dateTime })(v, ["payload"], leaves);
  const typed = typeof eventType === "string" ? PAYLOAD_RULES[eventType] : undefined;
  if (typed !== undefined) props(typed)(v, ["payload"], leaves);
  if (leaves.length === 0) return null;
  let best = leaves[0];
  for (const l of leaves.slice(1)) {
    const c = compareLocations(l.loc, best.loc);
    if (c < 0 || (c === 0 && l.prio < best.prio)) best = l;
  }
  return best.problem;
}

function compareLocations(a: string[], b: string[]): number {
  for (let i = 0; i < a.length && i < b.length; i++) {
    if (a[i] === b[i]) continue;
    if (/^\d+$/.test(a[i]) && /^\d+$/.test(b[i])) return Number(a[i]) - Number(b[i]);
    return Buffer.compare(Buffer.from(a[i]), Buffer.from(b[i]));
  }
  return a.length - b.length;
}

// ---- step 3: rules -----------------------------------------------------

function checkRules(doc: Map<string, Json>): Problem | null {
  for (const f of IDENTIFIERS) {
    const v = doc.get(f);
    if (typeof v === "string") {
      const n = Buffer.byteLength(v, "utf8");
      if (n > MAX_IDENTIFIER_BYTES) return identifierTooLong(f, n);
    }
  }
  const want = expectedKey(doc);
  const got = doc.get("idempotencyKey") as string;
  return got === want ? null : keyMismatch(want, got);
}

// ---- wording shared with the API ---------------------------------------

function kindOf(v: unknown): string {
  if (v === null || v === undefined) return "null";
  if (Array.isArray(v)) return "an array";
  if (typeof v === "string") return "a string";
  if (typeof v === "boolean") return "a boolean";
  return "a number";
}

// describe names a JSON value's type and, for scalars, shows it (the API's
// describeValue).
function describe(v: Json): string {
  if (v === null) return "null";
  if (typeof v === "boolean") return `boolean ${v}`;
  if (typeof v === "string") return `string ${goQuote(shorten(v))}`;
  if (typeof v === "number") return `number ${shorten(JSON.stringify(v))}`;
  return Array.isArray(v) ? "an array" : "an object";
}

// shorten keeps echoed input readable: at most 80 bytes of UTF-8, cut at a
// character boundary, then "...".
function shorten(s: string): string {
  const b = Buffer.from(s, "utf8");
  if (b.length <= 80) return s;
  let cut = 80;
  while (cut > 0 && (b[cut] & 0xc0) === 0x80) cut--;
  return b.subarray(0, cut).toString("utf8") + "...";
}

const PRINTABLE = /^[\p{L}\p{M}\p{N}\p{P}\p{S} ]$/u;

// goQuote is Go's strconv.Quote, which the API's messages use.
function goQuote(s: string): string {
  let out = '"';
  for (const ch of s) {
    const r = ch.codePointAt(0)!;
    if (ch === '"' || ch === "\\") out += "\\" + ch;
    else if (r >= 0xd800 && r <= 0xdfff) out += "\ufffd"; // Go decodes a lone surrogate to U+FFFD, printable
    else if (PRINTABLE.test(ch)) out += ch;
    else if (r === 7) out += "\\a";
    else if (r === 8) out += "\\b";
    else if (r === 12) out += "\\f";
    else if (r === 10) out += "\\n";
    else if (r === 13) out += "\\r";
    else if (r === 9) out += "\\t";
    else if (r === 11) out += "\\v";
    else if (r < 0x20 || r === 0x7f) out += "\\x" + r.toString(16).padStart(2, "0");
    else if (r < 0x10000) out += "\\u" + r.toString(16).padStart(4, "0");
    else out += "\\U" + r.toString(16).padStart(8, "0");
  }
  return out + '"';
}
