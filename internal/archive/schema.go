package archive

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/runstream/runstream/store"
)

// SchemaVersion names this package's Parquet schema; the writer records it
// in each file's footer under [MetaSchemaVersion]. A change to [Columns]
// that an existing reader could misread bumps it.
const SchemaVersion = "1"

// Footer key/value metadata every file carries.
const (
	// MetaSchemaVersion holds [SchemaVersion].
	MetaSchemaVersion = "runstream.archive.schema_version"
	// MetaRows holds the number of rows, in decimal.
	MetaRows = "runstream.archive.rows"
	// MetaChecksum holds the [Digest] of the rows in file order.
	MetaChecksum = "runstream.archive.checksum"
)

// row is one record as a Parquet row. The struct tags are the schema:
// column names in snake_case, strings as STRING (UTF8), dictionary
// encoding where a file repeats few values (tenant, project, environment,
// plan, event type), persisted_at as TIMESTAMP(MICROS, isAdjustedToUTC),
// step_id and payload optional. Compression is set on the writer (zstd).
type row struct {
	RunID            string  `parquet:"run_id"`
	RunSeq           int64   `parquet:"run_seq"`
	EventID          string  `parquet:"event_id"`
	EventType        string  `parquet:"event_type,dict"`
	IdempotencyKey   string  `parquet:"idempotency_key"`
	TenantID         string  `parquet:"tenant_id,dict"`
	ProjectID        string  `parquet:"project_id,dict"`
	EnvironmentID    string  `parquet:"environment_id,dict"`
	PlanID           string  `parquet:"plan_id,dict"`
	PlanVersion      string  `parquet:"plan_version,dict"`
	StepID           *string `parquet:"step_id,optional"`
	EngineAttemptID  int64   `parquet:"engine_attempt_id"`
	LogicalAttemptID int64   `parquet:"logical_attempt_id"`
	EmittedAt        string  `parquet:"emitted_at"`
	PersistedAt      int64   `parquet:"persisted_at,timestamp(microsecond:utc)"`
	Payload          *string `parquet:"payload,optional"`
}

// Column describes one column of the schema, for documentation and for
// readers that build queries.
type Column struct {
	// Name is the Parquet column name.
	Name string
	// Type is the Parquet physical and logical type.
	Type string
	// Nullable is true for an optional column.
	Nullable bool
	// Field is the RunEventRecord's JSON field the column holds.
	Field string
}

// Columns is the schema, in file order. docs/ARCHIVE.md holds the same
// table; TestColumns_MatchDoc and TestSchema_Columns keep the three (the
// doc, this list and the struct) in step.
var Columns = []Column{
	{"run_id", "BYTE_ARRAY STRING", false, "runId"},
	{"run_seq", "INT64", false, "runSeq"},
	{"event_id", "BYTE_ARRAY STRING", false, "eventId"},
	{"event_type", "BYTE_ARRAY STRING", false, "eventType"},
	{"idempotency_key", "BYTE_ARRAY STRING", false, "idempotencyKey"},
	{"tenant_id", "BYTE_ARRAY STRING", false, "tenantId"},
	{"project_id", "BYTE_ARRAY STRING", false, "projectId"},
	{"environment_id", "BYTE_ARRAY STRING", false, "environmentId"},
	{"plan_id", "BYTE_ARRAY STRING", false, "planId"},
	{"plan_version", "BYTE_ARRAY STRING", false, "planVersion"},
	{"step_id", "BYTE_ARRAY STRING", true, "stepId"},
	{"engine_attempt_id", "INT64", false, "engineAttemptId"},
	{"logical_attempt_id", "INT64", false, "logicalAttemptId"},
	{"emitted_at", "BYTE_ARRAY STRING", false, "emittedAt"},
	{"persisted_at", "INT64 TIMESTAMP(MICROS, UTC)", false, "persistedAt"},
	{"payload", "BYTE_ARRAY STRING", true, "payload"},
}

// schema is the Parquet schema of row, built once.
var schema = parquet.SchemaOf(row{})

// persistedAtLayout is the layout store.FormatPersistedAt renders; parsing
// with it and formatting again must give the same text back.
const persistedAtLayout = "2006-01-02T15:04:05.000000Z"

// toRow converts rec, refusing a persistedAt that the timestamp column
// could not give back byte for byte.
func toRow(rec *store.RunEventRecord) (row, error) {
	t, err := time.Parse(persistedAtLayout, rec.PersistedAt)
	if err != nil || store.FormatPersistedAt(t) != rec.PersistedAt {
		return row{}, fmt.Errorf("archive: event %s (run %s, runSeq %d): persistedAt %q is not the store's form (RFC 3339 UTC with six fractional digits, as store.FormatPersistedAt writes it)", rec.EventID, rec.RunID, rec.RunSeq, rec.PersistedAt)
	}
	r := row{
		RunID:            rec.RunID,
		RunSeq:           rec.RunSeq,
		EventID:          rec.EventID,
		EventType:        rec.EventType,
		IdempotencyKey:   rec.IdempotencyKey,
		TenantID:         rec.TenantID,
		ProjectID:        rec.ProjectID,
		EnvironmentID:    rec.EnvironmentID,
		PlanID:           rec.PlanID,
		PlanVersion:      rec.PlanVersion,
		EngineAttemptID:  rec.EngineAttemptID,
		LogicalAttemptID: rec.LogicalAttemptID,
		EmittedAt:        rec.EmittedAt,
		PersistedAt:      t.UnixMicro(),
	}
	if rec.StepID != "" {
		s := rec.StepID
		r.StepID = &s
	}
	if len(rec.Payload) > 0 {
		s := string(rec.Payload)
		r.Payload = &s
	}
	return r, nil
}

// record converts a row back; the inverse of toRow.
func (r *row) record() store.RunEventRecord {
	rec := store.RunEventRecord{
		RunEventWrite: store.RunEventWrite{
			EventID:          r.EventID,
			EventType:        r.EventType,
			EmittedAt:        r.EmittedAt,
			RunID:            r.RunID,
			TenantID:         r.TenantID,
			ProjectID:        r.ProjectID,
			EnvironmentID:    r.EnvironmentID,
			PlanID:           r.PlanID,
			PlanVersion:      r.PlanVersion,
			EngineAttemptID:  r.EngineAttemptID,
			LogicalAttemptID: r.LogicalAttemptID,
			IdempotencyKey:   r.IdempotencyKey,
		},
		RunSeq:      r.RunSeq,
		PersistedAt: store.FormatPersistedAt(time.UnixMicro(r.PersistedAt)),
	}
	if r.StepID != nil {
		rec.StepID = *r.StepID
	}
	if r.Payload != nil {
		rec.Payload = []byte(*r.Payload)
	}
	return rec
}

// Key is the object key of an archive file: the Hive-style path
// tenant=<tenant>/date=<date>/<name>.parquet. date is YYYY-MM-DD; name is
// 1-200 bytes of [A-Za-z0-9._-], not starting with a dot (the retention
// pass names a file after its partition). tenant is a tenantId
// ([store.ValidIdentifier]); it may not contain '/' or '\' or "..", and
// every byte outside [A-Za-z0-9._-] is written as %XX (as Hive escapes
// partition values), so a key never leaves its tenant's directory.
func Key(tenant, date, name string) (string, error) {
	if err := validTenant(tenant); err != nil {
		return "", err
	}
	if _, err := time.Parse(time.DateOnly, date); err != nil {
		return "", fmt.Errorf("archive key: date %q is not a YYYY-MM-DD date", date)
	}
	if err := validName(name); err != nil {
		return "", err
	}
	return "tenant=" + escapeValue(tenant) + "/date=" + date + "/" + name + ".parquet", nil
}

// ParseKey splits a key made by [Key] into its tenant (unescaped), date and
// name (without .parquet).
func ParseKey(key string) (tenant, date, name string, err error) {
	parts := strings.Split(key, "/")
	if len(parts) != 3 || !strings.HasPrefix(parts[0], "tenant=") || !strings.HasPrefix(parts[1], "date=") || !strings.HasSuffix(parts[2], ".parquet") {
		return "", "", "", fmt.Errorf("archive key %q is not tenant=<tenant>/date=<YYYY-MM-DD>/<name>.parquet", key)
	}
	tenant, err = unescapeValue(strings.TrimPrefix(parts[0], "tenant="))
	if err != nil {
		return "", "", "", fmt.Errorf("archive key %q: %w", key, err)
	}
	date = strings.TrimPrefix(parts[1], "date=")
	name = strings.TrimSuffix(parts[2], ".parquet")
	if k, err := Key(tenant, date, name); err != nil || k != key {
		return "", "", "", fmt.Errorf("archive key %q is not one Key makes (tenant %q, date %q, name %q)", key, tenant, date, name)
	}
	return tenant, date, name, nil
}

func validTenant(tenant string) error {
	switch {
	case tenant == "":
		return errors.New("archive key: tenant is empty")
	case strings.ContainsAny(tenant, `/\`):
		return fmt.Errorf("archive key: tenant %q contains a path separator", tenant)
	case strings.Contains(tenant, ".."):
		return fmt.Errorf("archive key: tenant %q contains \"..\"", tenant)
	case !store.ValidIdentifier(tenant):
		return fmt.Errorf("archive key: tenant %q is not a valid tenantId (1-255 bytes of printable UTF-8 without '|')", tenant)
	}
	return nil
}

func validName(name string) error {
	if name == "" || len(name) > 200 || name[0] == '.' {
		return fmt.Errorf("archive key: file name %q must be 1-200 bytes and not start with '.'", name)
	}
	for i := 0; i < len(name); i++ {
		if !safeByte(name[i]) {
			return fmt.Errorf("archive key: file name %q may hold only letters, digits, '.', '_' and '-'", name)
		}
	}
	return nil
}

func safeByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-'
}

func escapeValue(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if safeByte(c) {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, "%%%02X", c)
	}
	return b.String()
}

func unescapeValue(s string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '%' {
			b.WriteByte(c)
			continue
		}
		if i+2 >= len(s) {
			return "", fmt.Errorf("truncated escape in %q", s)
		}
		v, err := strconv.ParseUint(s[i+1:i+3], 16, 8)
		if err != nil {
			return "", fmt.Errorf("bad escape %q in %q", s[i:i+3], s)
		}
		b.WriteByte(byte(v))
		i += 2
	}
	return b.String(), nil
}
