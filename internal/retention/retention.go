// Package retention keeps the store bounded (issue 31): it keeps
// run_events' partitions made ahead of need, and, with a retention set,
// moves each partition whose runs all ended at least that long ago out of
// Postgres: retired (appends to its runs refused), detached, written to
// the archive as one Parquet file per tenant, each read back and verified
// against the table and recorded in the manifest, and only then dropped.
// Every step is recorded in the store's catalog (store/postgres
// Partition), so a pass interrupted at any point (a crash, kill -9, a
// refusing bucket) resumes where it stopped and never drops anything
// unverified. One pass runs at a time per schema (an advisory lock).
package retention

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/runstream/runstream/internal/archive"
	"github.com/runstream/runstream/store"
	"github.com/runstream/runstream/store/postgres"
)

// Defaults of Config.
const (
	DefaultPartitionWidth = 24 * time.Hour
	DefaultEvery          = 5 * time.Minute
	DefaultRoutingGrace   = time.Minute
)

// Location is the URL of key's object in storage: the storage's URL
// with key joined to its path (its query, an S3 endpoint, kept), as the
// manifest records it and an export opens it (SplitLocation).
func Location(storage archive.Storage, key string) string {
	u, err := url.Parse(storage.URL())
	if err != nil {
		return storage.URL() + "/" + key
	}
	u.Path = strings.TrimSuffix(u.Path, "/") + "/" + key
	return u.String()
}

// SplitLocation is Location's inverse: the storage URL and the key (the
// last three path segments, tenant=/date=/name.parquet, as archive.Key
// makes them).
func SplitLocation(location string) (storageURL, key string, err error) {
	u, err := url.Parse(location)
	if err != nil {
		return "", "", fmt.Errorf("archive location %q does not parse: %w", location, err)
	}
	parts := strings.Split(strings.TrimSuffix(u.Path, "/"), "/")
	if len(parts) < 4 {
		return "", "", fmt.Errorf("archive location %q does not end in tenant=<t>/date=<d>/<name>.parquet", location)
	}
	key = strings.Join(parts[len(parts)-3:], "/")
	if _, _, _, err := archive.ParseKey(key); err != nil {
		return "", "", fmt.Errorf("archive location %q: %w", location, err)
	}
	u.Path = strings.Join(parts[:len(parts)-3], "/")
	if u.Scheme == "file" && u.Path == "" {
		u.Path = "/"
	}
	return u.String(), key, nil
}

// Config is a Keeper's policy.
type Config struct {
	// Retention: a partition leaves the store once every run in it ended
	// at least this long ago. 0 turns removal off; partitions are still
	// made ahead.
	Retention time.Duration
	// PartitionWidth is the span of each new partition; 0 means
	// DefaultPartitionWidth. At least a minute.
	PartitionWidth time.Duration
	// Ahead is how far past now partitions are made; 0 means one
	// PartitionWidth.
	Ahead time.Duration
	// Every is the time between passes in Run; 0 means DefaultEvery.
	Every time.Duration
	// Archive receives the archive files; required with a Retention
	// unless NoArchive.
	Archive archive.Storage
	// NoArchive: the operator said removed runs need no archive
	// (--archive-url none). Their events are dropped unarchived; the
	// manifest records each tenant's count under postgres.NoArchive, and
	// audit reads over them say they were removed with no archive.
	NoArchive bool
	// TombstoneRetention: the runs rows a dropped partition leaves (its
	// runs' tombstones, which answer a late append RUN_ARCHIVED and a read
	// where the events went) are deleted this long after the drop, so the
	// store stops growing by a row per run ended. After that a run id of a
	// removed run is unknown: a duplicate of its events would start it
	// anew at runSeq 1, and its reads answer 404. 0 keeps them for ever.
	TombstoneRetention time.Duration
	// TempDir holds each file while it is written, before its upload
	// ("" is the system's).
	TempDir string
	// RoutingGrace: a partition is retired only once a later one began at
	// least this long ago (an append that chose it just before has then
	// ended); 0 means DefaultRoutingGrace.
	RoutingGrace time.Duration
	Log          *slog.Logger
	// OnStep, when set, is called after each step of a partition's
	// removal (Steps), for progress and for fault tests; an error it
	// returns ends the pass there, as a crash would.
	OnStep func(step, partition string) error
}

// Steps are the steps of a partition's removal, in order, as OnStep
// names them. "written", "uploaded" and "file" come once per tenant:
// the tenant's Parquet file is written locally (not yet closed: no
// footer), then uploaded (not yet read back), then verified and recorded
// in the manifest.
var Steps = []string{"retired", "detached", "written", "uploaded", "file", "archived", "dropped"}

// Validate checks c, with defaults applied, and says what to change.
func (c Config) Validate() error {
	c.setDefaults()
	switch {
	case c.Retention < 0:
		return fmt.Errorf("--retention must be 0 (off) or a positive duration, got %v", c.Retention)
	case c.Retention > 0 && c.Retention < time.Minute:
		return fmt.Errorf("--retention must be at least 1m, got %v", c.Retention)
	case c.Retention > 0 && c.Archive == nil && !c.NoArchive:
		return errors.New("--retention needs --archive-url: runs leave the store only once they are in the archive (or --archive-url none, if removed runs need no archive: their events are then gone)")
	case c.Archive != nil && c.NoArchive:
		return errors.New("give an archive or no archive (--archive-url none), not both")
	case c.PartitionWidth < time.Minute:
		return fmt.Errorf("--partition-interval must be at least 1m, got %v", c.PartitionWidth)
	case c.Ahead < 0:
		return fmt.Errorf("partitions are made ahead by 0 or more, got %v", c.Ahead)
	case c.Every <= 0:
		return fmt.Errorf("the time between retention passes must be positive, got %v", c.Every)
	case c.TombstoneRetention < 0:
		return fmt.Errorf("--tombstone-retention must be 0 (keep them for ever) or a positive duration, got %v", c.TombstoneRetention)
	case c.TombstoneRetention > 0 && c.Retention == 0:
		return errors.New("--tombstone-retention needs --retention: tombstones are what removed runs leave")
	case c.RoutingGrace < 0:
		return fmt.Errorf("the routing grace must be 0 (the default) or positive, got %v", c.RoutingGrace)
	}
	return nil
}

func (c *Config) setDefaults() {
	if c.PartitionWidth == 0 {
		c.PartitionWidth = DefaultPartitionWidth
	}
	if c.Ahead == 0 {
		c.Ahead = c.PartitionWidth
	}
	if c.Every == 0 {
		c.Every = DefaultEvery
	}
	if c.RoutingGrace == 0 {
		c.RoutingGrace = DefaultRoutingGrace
	}
	if c.Log == nil {
		c.Log = slog.New(slog.DiscardHandler)
	}
}

// Keeper runs retention passes over one store.
type Keeper struct {
	st  *postgres.Store
	cfg Config
}

// step reports a step done to OnStep.
func (k *Keeper) step(step, partition string) error {
	if k.cfg.OnStep == nil {
		return nil
	}
	return k.cfg.OnStep(step, partition)
}

// New returns a Keeper of st with cfg's policy.
func New(st *postgres.Store, cfg Config) (*Keeper, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Keeper{st: st, cfg: cfg}, nil
}

// Held is a partition retention left in the store, and why.
type Held struct {
	Partition string
	Hold      postgres.Hold
}

// Report is what one pass did.
type Report struct {
	// Skipped: another process held the retention lock; nothing was done.
	Skipped bool
	// PartitionsMade counts the partitions made ahead.
	PartitionsMade int
	Held           []Held
	// Dropped names the partitions whose events left the store in this
	// pass, archived and verified.
	Dropped []string
	// Files, Events and Bytes count the archive files written and
	// verified in this pass.
	Files, Events, Bytes int64
	// Tombstones counts the runs rows of partitions dropped more than
	// TombstoneRetention ago that this pass deleted.
	Tombstones int64
}

// Run makes a pass now and then every cfg.Every until ctx ends. A pass
// that fails is logged and tried again at the next; Run returns only
// ctx's end.
func (k *Keeper) Run(ctx context.Context) error {
	t := time.NewTicker(k.cfg.Every)
	defer t.Stop()
	for {
		rep, err := k.Pass(ctx)
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case err != nil:
			k.cfg.Log.Warn("retention pass failed; it resumes at the next pass", "err", err, "next", k.cfg.Every)
		case len(rep.Dropped) > 0 || rep.PartitionsMade > 0:
			k.cfg.Log.Info("retention pass", "partitionsMade", rep.PartitionsMade, "dropped", rep.Dropped,
				"files", rep.Files, "events", rep.Events, "bytes", rep.Bytes, "held", len(rep.Held))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

// Pass makes partitions ahead and, with a retention, takes every
// partition it may out of the store, oldest first. A partition retired
// by an earlier pass is taken on from the step it reached.
func (k *Keeper) Pass(ctx context.Context) (Report, error) {
	var rep Report
	release, ok, err := k.st.TryRetentionLock(ctx)
	if err != nil {
		return rep, err
	}
	if !ok {
		rep.Skipped = true
		return rep, nil
	}
	defer release()
	err = k.pass(ctx, &rep)
	// What status reports: this pass's settings and how it ended.
	rec := postgres.RetentionPass{Retention: k.cfg.Retention, PartitionWidth: k.cfg.PartitionWidth, Dropped: rep.Dropped}
	switch {
	case k.cfg.Archive != nil:
		rec.ArchiveURL = k.cfg.Archive.URL()
	case k.cfg.NoArchive:
		rec.ArchiveURL = postgres.NoArchive
	}
	if err != nil {
		rec.Error = err.Error()
	}
	if rerr := k.st.RecordRetentionPass(context.WithoutCancel(ctx), rec); rerr != nil && err == nil {
		err = rerr
	}
	return rep, err
}

func (k *Keeper) pass(ctx context.Context, rep *Report) error {
	removeAbandonedTemps(k.cfg.TempDir, k.cfg.Log)
	var err error
	if rep.PartitionsMade, err = k.st.EnsurePartitions(ctx, k.cfg.PartitionWidth, k.cfg.Ahead); err != nil {
		return err
	}
	if k.cfg.Retention == 0 {
		return nil
	}
	cutoff := time.Now().Add(-k.cfg.Retention)
	parts, err := k.st.Partitions(ctx)
	if err != nil {
		return err
	}
	for _, p := range parts {
		if p.DroppedAt != nil {
			continue
		}
		if p.RetiredAt == nil {
			hold, err := k.st.RetirementHold(ctx, p, cutoff, k.cfg.RoutingGrace)
			if err != nil {
				return err
			}
			if hold != postgres.HoldNone {
				rep.Held = append(rep.Held, Held{Partition: p.Name, Hold: hold})
				continue
			}
			if err := k.st.RetirePartition(ctx, p); err != nil {
				return err
			}
			k.cfg.Log.Info("retention: partition retired; appends to its runs are refused from now on", "partition", p.Name)
			if err := k.step("retired", p.Name); err != nil {
				return err
			}
		}
		done, err := k.remove(ctx, p.Name, cutoff, rep)
		if err != nil {
			return err
		}
		if done {
			rep.Dropped = append(rep.Dropped, p.Name)
		}
	}
	if k.cfg.TombstoneRetention > 0 {
		if rep.Tombstones, err = k.st.PruneTombstones(ctx, time.Now().Add(-k.cfg.TombstoneRetention), tombstoneBatch); err != nil {
			return err
		}
		if rep.Tombstones > 0 {
			k.cfg.Log.Info("retention: tombstones of runs removed long ago deleted", "runs", rep.Tombstones, "droppedBefore", time.Now().Add(-k.cfg.TombstoneRetention))
		}
	}
	return nil
}

// tombstoneBatch is how many tombstones one DELETE removes: each is a
// short transaction, so a backlog of millions never holds a long one.
const tombstoneBatch = 10000

// remove takes retired partition name from wherever an earlier pass left
// it to dropped; false when it must wait (an event still to be relayed).
func (k *Keeper) remove(ctx context.Context, name string, cutoff time.Time, rep *Report) (bool, error) {
	p, err := k.partition(ctx, name)
	if err != nil {
		return false, err
	}
	if p.Attached && !p.DetachPending {
		if err := k.st.WaitForWriters(ctx, p, time.Minute); err != nil {
			return false, err
		}
		// Appends that read the catalog before the retirement have
		// ended: look again at what they may have written.
		hold, err := k.st.RetirementHold(ctx, p, cutoff, 0)
		if err != nil {
			return false, err
		}
		switch hold {
		case postgres.HoldNone, postgres.HoldRouting:
		case postgres.HoldOutbox, postgres.HoldDeadLetters:
			// The relay publishes it (or an operator handles the dead
			// letter), then a later pass goes on.
			rep.Held = append(rep.Held, Held{Partition: p.Name, Hold: hold})
			return false, nil
		default:
			// A run began in it after all: it must take that run's events.
			if err := k.st.UnretirePartition(ctx, p); err != nil {
				return false, err
			}
			k.cfg.Log.Warn("retention: a run began in a partition as it was retired; retirement taken back", "partition", p.Name, "hold", hold)
			rep.Held = append(rep.Held, Held{Partition: p.Name, Hold: hold})
			return false, nil
		}
	}
	if err := k.st.DetachPartition(ctx, p); err != nil {
		return false, err
	}
	if err := k.step("detached", name); err != nil {
		return false, err
	}
	if p, err = k.partition(ctx, name); err != nil {
		return false, err
	}
	verified := map[string]bool{} // tenants whose file this pass wrote and read back
	if p.ArchivedAt == nil {
		if err := k.archive(ctx, p, rep, verified); err != nil {
			return false, err
		}
		if err := k.st.MarkArchived(ctx, p); err != nil {
			return false, err
		}
		if err := k.step("archived", name); err != nil {
			return false, err
		}
		if p, err = k.partition(ctx, name); err != nil {
			return false, err
		}
	}
	// Files an earlier pass verified are read again: the archive may have
	// lost or changed them since, and the drop is the last moment to see.
	if err := k.recheck(ctx, p, verified); err != nil {
		return false, err
	}
	if err := k.st.DropPartition(ctx, p); err != nil {
		return false, err
	}
	if err := k.step("dropped", name); err != nil {
		return false, err
	}
	k.cfg.Log.Info("retention: partition dropped, its events archived and verified", "partition", p.Name)
	return true, nil
}

func (k *Keeper) partition(ctx context.Context, name string) (postgres.Partition, error) {
	parts, err := k.st.Partitions(ctx)
	if err != nil {
		return postgres.Partition{}, err
	}
	for _, p := range parts {
		if p.Name == name {
			return p, nil
		}
	}
	return postgres.Partition{}, fmt.Errorf("partition %s is no longer in the catalog", name)
}

// archive writes one file per tenant of detached p that the manifest does
// not already hold with the table's count, each read back and verified
// before its manifest row is written.
func (k *Keeper) archive(ctx context.Context, p postgres.Partition, rep *Report, verified map[string]bool) error {
	tenants, err := k.st.PartitionTenants(ctx, p)
	if err != nil {
		return err
	}
	done, err := k.st.Archives(ctx, p)
	if err != nil {
		return err
	}
	have := make(map[string]int64, len(done))
	for _, f := range done {
		have[f.TenantID] = f.Events
	}
	for _, tn := range tenants {
		if n, ok := have[tn.TenantID]; ok && n == tn.Events {
			continue // verified by an earlier pass
		}
		f := postgres.ArchiveFile{TenantID: tn.TenantID, Location: postgres.NoArchive, Events: tn.Events,
			MinPersistedAt: tn.MinPersistedAt, MaxPersistedAt: tn.MaxPersistedAt}
		if !k.cfg.NoArchive {
			if f, err = k.archiveTenant(ctx, p, tn); err != nil {
				return err
			}
		}
		if err := k.st.RecordArchive(ctx, p, f); err != nil {
			return err
		}
		verified[tn.TenantID] = true
		if err := k.step("file", p.Name); err != nil {
			return err
		}
		rep.Files++
		rep.Events += f.Events
		rep.Bytes += f.Bytes
	}
	return nil
}

// archiveTenant writes tenant tn's events of p to a local file, uploads
// it, reads it back from the archive and checks it against what was
// written: the row count the table has, and the checksum of the records
// in the order the table gave them.
func (k *Keeper) archiveTenant(ctx context.Context, p postgres.Partition, tn postgres.TenantEvents) (postgres.ArchiveFile, error) {
	date := p.Epoch
	if p.Legacy {
		date = tn.MinPersistedAt
	}
	key, err := archive.Key(tn.TenantID, date.UTC().Format(time.DateOnly), p.Name)
	if err != nil {
		return postgres.ArchiveFile{}, err
	}
	tmp, err := os.CreateTemp(k.cfg.TempDir, tempPrefix+strconv.Itoa(os.Getpid())+"-*.parquet")
	if err != nil {
		return postgres.ArchiveFile{}, fmt.Errorf("archiving partition %s: creating a local file to write tenant %s's events in (--temp-dir): %w", p.Name, tn.TenantID, err)
	}
	defer func() {
		_ = tmp.Close()
		_ = os.Remove(tmp.Name())
	}()
	// The bytes' SHA-256 as written: the upload read back must hash the
	// same. The file's footer holds its row count and the checksum of its
	// records as the table gave them, so identical bytes prove both
	// without decoding the file again.
	fileHash := sha256.New()
	w := archive.NewWriter(io.MultiWriter(tmp, fileHash))
	if err := scanInto(ctx, k.st, p, tn.TenantID, w.Write); err != nil {
		return postgres.ArchiveFile{}, fmt.Errorf("archiving partition %s: %w", p.Name, err)
	}
	if err := k.step("written", p.Name); err != nil {
		return postgres.ArchiveFile{}, err
	}
	wrote, err := w.Close()
	if err != nil {
		return postgres.ArchiveFile{}, fmt.Errorf("archiving partition %s: writing tenant %s's file: %w", p.Name, tn.TenantID, err)
	}
	if wrote.Rows != tn.Events {
		return postgres.ArchiveFile{}, fmt.Errorf("archiving partition %s: tenant %s has %d events in the table but %d were written", p.Name, tn.TenantID, tn.Events, wrote.Rows)
	}
	if err := tmp.Sync(); err != nil {
		return postgres.ArchiveFile{}, fmt.Errorf("archiving partition %s: %w", p.Name, err)
	}
	if _, err := tmp.Seek(0, io.SeekStart); err != nil {
		return postgres.ArchiveFile{}, fmt.Errorf("archiving partition %s: %w", p.Name, err)
	}
	loc := Location(k.cfg.Archive, key)
	if err := k.cfg.Archive.Put(ctx, key, tmp, wrote.Bytes); err != nil {
		return postgres.ArchiveFile{}, fmt.Errorf("archiving partition %s: uploading %s: %w", p.Name, loc, err)
	}
	if err := k.step("uploaded", p.Name); err != nil {
		return postgres.ArchiveFile{}, err
	}
	if err := k.readBackBytes(ctx, key, wrote.Bytes, fileHash.Sum(nil)); err != nil {
		return postgres.ArchiveFile{}, fmt.Errorf("archiving partition %s: reading back %s: %w; it is not recorded, and the next pass writes it again", p.Name, loc, err)
	}
	return postgres.ArchiveFile{TenantID: tn.TenantID, Location: loc, Events: wrote.Rows,
		Bytes: wrote.Bytes, Checksum: wrote.Checksum, MinPersistedAt: tn.MinPersistedAt, MaxPersistedAt: tn.MaxPersistedAt}, nil
}

// WriteArchive writes tenant's events of detached partition name to the
// archive and verifies them as a pass does, without recording the file in
// the manifest: for measuring the archive's speed (runstream bench
// archive). A pass later writes the same key again.
func (k *Keeper) WriteArchive(ctx context.Context, name, tenant string) (postgres.ArchiveFile, error) {
	if k.cfg.Archive == nil {
		return postgres.ArchiveFile{}, errors.New("writing an archive file needs an archive")
	}
	p, err := k.partition(ctx, name)
	if err != nil {
		return postgres.ArchiveFile{}, err
	}
	tenants, err := k.st.PartitionTenants(ctx, p)
	if err != nil {
		return postgres.ArchiveFile{}, err
	}
	for _, tn := range tenants {
		if tn.TenantID == tenant {
			return k.archiveTenant(ctx, p, tn)
		}
	}
	return postgres.ArchiveFile{}, fmt.Errorf("partition %s holds no event of tenant %s", name, tenant)
}

// recheck reads back each of p's manifest files not verified in this pass
// and compares it with its manifest row. A file that is missing or holds
// something else stops the removal: its row is forgotten and p's archived
// mark taken back, so the next pass writes the file again from the
// detached table.
func (k *Keeper) recheck(ctx context.Context, p postgres.Partition, verified map[string]bool) error {
	if k.cfg.NoArchive {
		return nil
	}
	files, err := k.st.Archives(ctx, p)
	if err != nil {
		return err
	}
	for _, f := range files {
		if verified[f.TenantID] {
			continue
		}
		if f.Location == postgres.NoArchive {
			return fmt.Errorf("partition %s: tenant %s's events are recorded as removed with no archive, but this pass has an archive (%s): run with --archive-url none to go on, or archive them", p.Name, f.TenantID, k.cfg.Archive.URL())
		}
		_, key, err := SplitLocation(f.Location)
		var read archive.Summary
		if err == nil {
			read, err = k.readBack(ctx, key)
		}
		if err == nil && (read.Rows != f.Events || read.Checksum != f.Checksum) {
			err = fmt.Errorf("it holds %d events with checksum %s, the manifest %d with %s", read.Rows, read.Checksum, f.Events, f.Checksum)
		}
		if err != nil {
			if ferr := k.st.ForgetArchive(ctx, p, f.TenantID); ferr != nil {
				return errors.Join(err, ferr)
			}
			return fmt.Errorf("partition %s: tenant %s's archive file %s no longer matches the manifest (%w); nothing dropped: the row is forgotten and the next pass writes the file again", p.Name, f.TenantID, f.Location, err)
		}
	}
	return nil
}

// scanBatch is how many records scanInto hands over at a time.
const scanBatch = 512

// scanInto calls write with each of tenant's events of p in the audit
// order, as ScanPartition gives them, but receives them in a goroutine of
// its own: decoding Postgres' rows and encoding Parquet then overlap
// instead of taking turns (the server waits while a single loop encodes).
func scanInto(ctx context.Context, st *postgres.Store, p postgres.Partition, tenant string, write func(store.RunEventRecord) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	batches := make(chan []store.RunEventRecord, 8)
	scanErr := make(chan error, 1)
	go func() {
		defer close(batches)
		batch := make([]store.RunEventRecord, 0, scanBatch)
		err := st.ScanPartition(ctx, p, tenant, func(rec store.RunEventRecord) error {
			batch = append(batch, rec)
			if len(batch) < scanBatch {
				return nil
			}
			select {
			case batches <- batch:
				batch = make([]store.RunEventRecord, 0, scanBatch)
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		})
		if err == nil && len(batch) > 0 {
			select {
			case batches <- batch:
			case <-ctx.Done():
				err = ctx.Err()
			}
		}
		scanErr <- err
	}()
	var writeErr error
	for batch := range batches {
		for _, rec := range batch {
			if writeErr == nil {
				writeErr = write(rec)
			}
		}
		if writeErr != nil {
			cancel() // the scan stops; its batches are drained
		}
	}
	if err := <-scanErr; writeErr == nil && err != nil {
		return err
	}
	return writeErr
}

// readBackBytes reads key's object back from the archive and checks that
// it is the size bytes whose SHA-256 is sum.
func (k *Keeper) readBackBytes(ctx context.Context, key string, size int64, sum []byte) error {
	obj, err := k.cfg.Archive.Open(ctx, key)
	if err != nil {
		return err
	}
	defer obj.Close()
	if obj.Size() != size {
		return fmt.Errorf("it holds %d bytes, but %d were written", obj.Size(), size)
	}
	h := sha256.New()
	if _, err := io.Copy(h, io.NewSectionReader(obj, 0, size)); err != nil {
		return err
	}
	if got := h.Sum(nil); !bytes.Equal(got, sum) {
		return fmt.Errorf("its bytes hash to SHA-256 %x, but those written to %x", got, sum)
	}
	return nil
}

func (k *Keeper) readBack(ctx context.Context, key string) (archive.Summary, error) {
	obj, err := k.cfg.Archive.Open(ctx, key)
	if err != nil {
		return archive.Summary{}, err
	}
	defer obj.Close()
	return archive.Read(obj, obj.Size(), func(store.RunEventRecord) error { return nil })
}

// ErrNoArchive is the error for events that were removed with no archive
// (--archive-url none); nothing can read them any more.
var ErrNoArchive = errors.New("these events were removed from the store with no archive (retention ran with --archive-url none): they cannot be read")

// FileReader reads archive files by their location (the manifest's), for
// an export (export.Archive): each location's storage is opened once.
type FileReader struct {
	getenv func(string) string
	opened map[string]archive.Storage
}

// NewFileReader returns a FileReader whose S3 credentials come from getenv.
func NewFileReader(getenv func(string) string) *FileReader {
	return &FileReader{getenv: getenv, opened: map[string]archive.Storage{}}
}

// ReadFile calls fn with each record of the file at location, in order.
func (r *FileReader) ReadFile(ctx context.Context, location string, fn func(store.RunEventRecord) error) error {
	if location == postgres.NoArchive {
		return ErrNoArchive
	}
	root, key, err := SplitLocation(location)
	if err != nil {
		return err
	}
	st, ok := r.opened[root]
	if !ok {
		if st, err = archive.OpenStorage(root, r.getenv); err != nil {
			return err
		}
		r.opened[root] = st
	}
	obj, err := st.Open(ctx, key)
	if err != nil {
		return err
	}
	defer obj.Close()
	_, err = archive.Read(obj, obj.Size(), fn)
	return err
}
