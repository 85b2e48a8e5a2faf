package postgres

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// The outbox is two parts used in turn (migration 0011): outbox_0 holds
// the rows whose id has bit outboxPartShift clear, outbox_1 the others, so
// the id sequence decides where an append goes and appends read nothing
// to know it. [Outbox.Rotate] moves appends to the other part by moving the
// sequence forward to the next block of ids, and truncates the part
// appends left once it is empty, which returns its files (the table's and
// its indexes') to the filesystem at once: the space a backlog took does
// not stay with the outbox after it drained, as it did when DELETE and
// VACUUM alone kept one table.
//
// Why no row is lost: a part is truncated only under ACCESS EXCLUSIVE,
// which waits until every transaction that wrote to it ended, and only
// when a read made after the lock was granted finds it empty. An append
// that took its id before the switch may still insert into the old part
// after that (its INSERT waits for the lock): its row is then in the
// truncated part, read like any other, and the part is truncated again
// once it is empty again.
//
// Why per-run order holds: ids only grow (the switch moves the sequence
// forward, never back), a run's rows take their ids under the run's
// counter lock, and the relay reads both parts in id order.

// outboxPartShift is the bit of an outbox row's id that names its part:
// migration 0011's partition key is ((id >> 24) & 1). A switch costs at
// most one block of 2^24 ids; ids stay below 2^53 (exact in JavaScript)
// for 2^29 switches.
const outboxPartShift = 24

// outboxParts names the parts by number.
var outboxParts = [2]string{"outbox_0", "outbox_1"}

// DefaultOutboxSwitchBytes is the default of
// [RotateOutboxOptions.SwitchBytes]: small next to a backlog (300,000 rows
// take 50 MB), and above what a part takes while the relay keeps up and
// vacuum reclaims its dead rows. A part that grows past it anyway (a long
// transaction holding vacuum back) is switched away from and truncated
// too, which costs little.
const DefaultOutboxSwitchBytes = 8 << 20

// DefaultOutboxLockTimeout is the default of
// [RotateOutboxOptions.LockTimeout].
const DefaultOutboxLockTimeout = 100 * time.Millisecond

// RotateOutboxOptions configures [Outbox.Rotate]. Zero values take the
// defaults noted.
type RotateOutboxOptions struct {
	// SwitchBytes is the size on disk (table and indexes) of the part
	// taking appends from which appends switch to the other part, once
	// that one is truncated; 0 means DefaultOutboxSwitchBytes.
	SwitchBytes int64
	// LockTimeout bounds the wait for the exclusive lock on a drained
	// part. Reads of the outbox queue behind that wait (appends to the
	// other part do not), so it gives up soon and a later call tries
	// again; 0 means DefaultOutboxLockTimeout.
	LockTimeout time.Duration

	// hook, when set (tests), is called at the named stages of a call
	// with the backend's pid.
	hook func(stage string, pid uint32)
}

// setDefaults gives every field not above zero its default.
func (o *RotateOutboxOptions) setDefaults() {
	if o.SwitchBytes <= 0 {
		o.SwitchBytes = DefaultOutboxSwitchBytes
	}
	if o.LockTimeout <= 0 {
		o.LockTimeout = DefaultOutboxLockTimeout
	}
}

// OutboxStep is what one [Outbox.Rotate] call did.
type OutboxStep int

const (
	// OutboxIdle: nothing to do. The other part took no row since it
	// was truncated, and the one taking appends is below SwitchBytes (or
	// took no row either).
	OutboxIdle OutboxStep = iota
	// OutboxBusy: nothing done this time. Another process is rotating
	// the outbox, or the drained part is still held by a transaction that
	// wrote to it (or by a vacuum), or its exclusive lock was not granted
	// within LockTimeout.
	OutboxBusy
	// OutboxDraining: the part appends left still holds rows for the
	// relay to publish.
	OutboxDraining
	// OutboxSwitched: appends now go to the other part.
	OutboxSwitched
	// OutboxTruncated: the part appends left was empty and is truncated.
	OutboxTruncated
)

func (s OutboxStep) String() string {
	switch s {
	case OutboxIdle:
		return "idle"
	case OutboxBusy:
		return "busy"
	case OutboxDraining:
		return "draining"
	case OutboxSwitched:
		return "switched"
	case OutboxTruncated:
		return "truncated"
	}
	return "OutboxStep(" + strconv.Itoa(int(s)) + ")"
}

// OutboxRotation is the result of an [Outbox.Rotate] call.
type OutboxRotation struct {
	Step OutboxStep
	// Part is the part appends left (OutboxSwitched, OutboxDraining) or
	// the part truncated (OutboxTruncated).
	Part int
	// Bytes is what the truncated part held on disk (OutboxTruncated).
	Bytes int64
}

// MayRotate reports whether the session's role may rotate the outbox:
// read and set its id sequence and truncate its parts.
func (o *Outbox) MayRotate(ctx context.Context) (bool, error) {
	var may bool
	err := o.pool.QueryRow(ctx, `SELECT has_sequence_privilege('outbox_id_seq', 'SELECT, UPDATE')
		AND has_table_privilege('outbox_0', 'TRUNCATE') AND has_table_privilege('outbox_1', 'TRUNCATE')`).Scan(&may)
	if err != nil {
		return false, fmt.Errorf("checking the privileges that rotating the outbox needs: %w", err)
	}
	return may, nil
}

// Rotate takes one step of the outbox's rotation: it truncates the
// part appends left when that part is empty (OutboxTruncated; OutboxDraining
// while it holds rows), else switches appends to the other part when the
// one taking them reached opts.SwitchBytes (OutboxSwitched). One call does
// at most one of the two, in one transaction, and never blocks appends:
// calling it often (the relay does, every second) is cheap. Any number of
// processes may call it at once (one proceeds, the others get
// OutboxBusy), and a call cancelled or cut off at any point leaves the
// outbox as it was or with its step done.
func (o *Outbox) Rotate(ctx context.Context, opts RotateOutboxOptions) (OutboxRotation, error) {
	opts.setDefaults()
	// READ COMMITTED whatever the server's default: the check made under
	// the lock must take a snapshot of its own, after the lock was granted,
	// to see rows committed since the transaction began.
	tx, err := o.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.ReadCommitted})
	if err != nil {
		return OutboxRotation{}, fmt.Errorf("rotating the outbox: %w", err)
	}
	defer func() { _ = tx.Rollback(ctx) }() // cancelled, pgx closes the connection, and the session's end rolls back
	res, err := rotateOutbox(ctx, tx, opts)
	if err != nil {
		return OutboxRotation{}, fmt.Errorf("rotating the outbox: %w", err)
	}
	// Only a truncation needs the commit: the switch's setval is not
	// transactional, and every other step changed nothing (a lock timeout
	// left the transaction aborted).
	if res.Step == OutboxTruncated {
		if err := tx.Commit(ctx); err != nil {
			return OutboxRotation{}, fmt.Errorf("rotating the outbox: committing the truncation of %s: %w", outboxParts[res.Part], err)
		}
	}
	return res, nil
}

func rotateOutbox(ctx context.Context, tx pgx.Tx, opts RotateOutboxOptions) (OutboxRotation, error) {
	hook := func(stage string) {
		if opts.hook != nil {
			opts.hook(stage, tx.Conn().PgConn().PID())
		}
	}
	var mine bool
	if err := tx.QueryRow(ctx, `SELECT pg_try_advisory_xact_lock(
			hashtextextended('runstream-outbox-rotation|' || coalesce(current_schema(), ''), 0))`).Scan(&mine); err != nil {
		return OutboxRotation{}, fmt.Errorf("taking the rotation's lock: %w", err)
	}
	if !mine {
		return OutboxRotation{Step: OutboxBusy}, nil
	}
	// The part taking appends is the one of the sequence's last id: a
	// hint (ids taken since may be past a block's end), which the switch
	// checks again below with an id of its own. A part is pristine when no
	// row was inserted into it since it was created or truncated: no table
	// page, and each index at its first page (a btree's file never shrinks
	// and a vacuum may empty the table's file, so neither size alone
	// tells).
	var (
		active   int
		total    []int64
		pristine []bool
	)
	if err := tx.QueryRow(ctx, `SELECT ((s.last_value >> 24) & 1)::int,
			array_agg(pg_total_relation_size(p.rel) ORDER BY p.n),
			array_agg(pg_relation_size(p.rel) = 0 AND pg_indexes_size(p.rel) <=
				(SELECT count(*) FROM pg_index WHERE indrelid = p.rel) * current_setting('block_size')::bigint ORDER BY p.n)
		FROM outbox_id_seq s, (VALUES (0, 'outbox_0'::regclass), (1, 'outbox_1'::regclass)) p(n, rel)
		GROUP BY s.last_value`).Scan(&active, &total, &pristine); err != nil {
		return OutboxRotation{}, fmt.Errorf("reading the parts' sizes: %w", err)
	}
	other := 1 - active
	if !pristine[other] {
		return retireOutboxPart(ctx, tx, other, opts.LockTimeout, hook)
	}
	// Switching away from a pristine part would only spend ids.
	if pristine[active] || total[active] < opts.SwitchBytes {
		return OutboxRotation{Step: OutboxIdle}, nil
	}
	var id int64
	if err := tx.QueryRow(ctx, `SELECT nextval('outbox_id_seq')`).Scan(&id); err != nil {
		return OutboxRotation{}, fmt.Errorf("taking an outbox id: %w", err)
	}
	if int(id>>outboxPartShift&1) != active {
		// The ids crossed into the other part by themselves meanwhile.
		return OutboxRotation{Step: OutboxIdle}, nil
	}
	hook("switching")
	// Forward only: every id handed out so far is below the next block's
	// first (it would take 2^24 appends between the nextval above and this
	// to pass it).
	next := (id>>outboxPartShift + 1) << outboxPartShift
	if _, err := tx.Exec(ctx, `SELECT setval('outbox_id_seq', $1, false)`, next); err != nil {
		return OutboxRotation{}, fmt.Errorf("moving the outbox id sequence to %d: %w", next, err)
	}
	return OutboxRotation{Step: OutboxSwitched, Part: active}, nil
}

// retireOutboxPart truncates part when it holds no row.
func retireOutboxPart(ctx context.Context, tx pgx.Tx, part int, lockTimeout time.Duration, hook func(string)) (OutboxRotation, error) {
	name := outboxParts[part]
	// Both emptiness checks go by the index on id rather than reading the
	// table: after a backlog drained, the part is every page of it, dead,
	// and the second check runs under the exclusive lock, with the relay's
	// reads waiting. The first check marks the dead index entries it
	// walks, so the second skips them.
	if _, err := tx.Exec(ctx, `SELECT set_config('enable_seqscan', 'off', true)`); err != nil {
		return OutboxRotation{}, err
	}
	empty := func() (bool, error) {
		var one int
		err := tx.QueryRow(ctx, `SELECT 1 FROM `+name+` ORDER BY id LIMIT 1`).Scan(&one)
		if errors.Is(err, pgx.ErrNoRows) {
			return true, nil
		}
		if err != nil {
			return false, fmt.Errorf("reading the head of %s: %w", name, err)
		}
		return false, nil
	}
	if ok, err := empty(); err != nil || !ok {
		return OutboxRotation{Step: OutboxDraining, Part: part}, err
	}
	// A transaction that wrote to the part and has been open a while (an
	// append that took its id before the switch and has not committed, a
	// long vacuum) would make the lock below wait its whole timeout, with
	// the relay's reads queued behind it: come back later instead. A
	// recent one (the relay's delete of published rows) ends within
	// milliseconds, and readers (the relay's reads) do not count. A
	// holder whose start this role may not see counts as old.
	var held bool
	if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_locks l LEFT JOIN pg_stat_activity a ON a.pid = l.pid
		WHERE l.locktype = 'relation' AND l.relation = $1::regclass AND l.granted AND l.mode <> 'AccessShareLock'
		  AND l.pid IS DISTINCT FROM pg_backend_pid()
		  AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
		  AND (a.xact_start IS NULL OR a.xact_start < clock_timestamp() - $2 * interval '1 millisecond'))`,
		name, lockTimeout.Milliseconds()).Scan(&held); err != nil {
		return OutboxRotation{}, fmt.Errorf("looking for transactions holding %s: %w", name, err)
	}
	if held {
		return OutboxRotation{Step: OutboxBusy, Part: part}, nil
	}
	hook("checked")
	if _, err := tx.Exec(ctx, `SELECT set_config('lock_timeout', $1, true)`,
		strconv.FormatInt(max(lockTimeout.Milliseconds(), 1), 10)+"ms"); err != nil {
		return OutboxRotation{}, err
	}
	if _, err := tx.Exec(ctx, `LOCK TABLE `+name+` IN ACCESS EXCLUSIVE MODE`); err != nil {
		var pe *pgconn.PgError
		if errors.As(err, &pe) && pe.Code == pgerrcode.LockNotAvailable {
			return OutboxRotation{Step: OutboxBusy, Part: part}, nil
		}
		return OutboxRotation{}, fmt.Errorf("locking %s: %w", name, err)
	}
	hook("locked")
	// Under the lock no transaction can be writing to the part, and this
	// read sees every row committed to it, including any committed since
	// the first check.
	if ok, err := empty(); err != nil || !ok {
		return OutboxRotation{Step: OutboxDraining, Part: part}, err
	}
	var size int64
	if err := tx.QueryRow(ctx, `SELECT pg_total_relation_size($1::regclass)`, name).Scan(&size); err != nil {
		return OutboxRotation{}, err
	}
	if _, err := tx.Exec(ctx, `TRUNCATE `+name); err != nil {
		return OutboxRotation{}, fmt.Errorf("truncating %s: %w", name, err)
	}
	return OutboxRotation{Step: OutboxTruncated, Part: part, Bytes: size}, nil
}
