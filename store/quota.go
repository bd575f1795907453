package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
)

// What a student's kept runs take, and what the store refuses when the disk is nearly full.
//
// Every run counts its own bytes (runBytes: its source and names) and the bytes of every message it
// keeps against its student, in the table run_bytes (Usage). Prune removes the messages of a
// student's oldest finished runs until the student is within a quota, leaving on each a note. A
// run that shows another run's results keeps a reference to it (AddRef), not a copy.

// typeRef is the type of a kept message that stands for another run's messages (AddRef, Messages).
const typeRef = "ref"

// runRowBytes is what a run's row takes beside its text columns, for Usage, in bytes.
const runRowBytes = 128

// refSkips reports whether a message of type typ of a referenced run is left out where the
// reference stands: the referenced run's start and end are its own.
func refSkips(typ string) bool {
	switch typ {
	case "queued", "started", StatusDone, StatusCancelled, StatusError, typeRef:
		return true
	}
	return false
}

// runBytes is what run r's row counts against its student's quota, in bytes.
func runBytes(r Run) int64 {
	return int64(runRowBytes + len(r.Lesson) + len(r.Cell) + len(r.Action) + len(r.Source) + len(r.Machine) + len(r.Owner) + len(r.Class))
}

type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// addBytes adds n bytes (negative: removes) to student's usage.
func addBytes(ctx context.Context, db execer, student, n int64) error {
	_, err := db.ExecContext(ctx, `INSERT INTO run_bytes(student, bytes) VALUES (?, ?)
		ON CONFLICT(student) DO UPDATE SET bytes = bytes + excluded.bytes`, student, n)
	return err
}

// countBytes fills run_bytes from the runs and messages of a database made before it existed.
func (s *Store) countBytes() error {
	var counted, runs int
	if err := s.db.QueryRow("SELECT (SELECT count(*) FROM run_bytes), (SELECT count(*) FROM runs)").Scan(&counted, &runs); err != nil {
		return err
	}
	if counted > 0 || runs == 0 {
		return nil
	}
	_, err := s.db.Exec(`INSERT INTO run_bytes(student, bytes)
		SELECT r.student, sum(? + length(r.lesson) + length(r.cell) + length(r.action) + length(r.source) + length(r.machine) + length(r.owner) + length(r.class)
			+ (SELECT coalesce(sum(length(m.body)), 0) FROM messages m WHERE m.run = r.id))
		FROM runs r GROUP BY r.student`, runRowBytes)
	return err
}

// Usage is what student's runs and their kept messages take, in bytes (the quota's measure).
func (s *Store) Usage(ctx context.Context, student int64) (int64, error) {
	return usage(ctx, s.db, student)
}

// AddRef keeps, as run's message seq, a reference to run from's messages: Messages shows from's
// messages there (but for its start and end), without copying them.
func (s *Store) AddRef(ctx context.Context, run, seq, from int64) error {
	return s.AddMessage(ctx, run, seq, typeRef, strconv.FormatInt(from, 10), false)
}

// Prune brings student's usage within quota bytes, if it can, in one transaction: the messages of
// the student's oldest finished runs (done, cancelled, error, interrupted) are removed, all but the
// terminal one, and note (a message's JSON, kept as a "note") stands first in their place; such a
// run is marked Pruned. Runs whose messages take no more than note are left alone. It returns how
// many runs it pruned and the usage after (over quota where queued and running runs and the runs'
// own bytes alone are more).
func (s *Store) Prune(ctx context.Context, student, quota int64, note string) (pruned int, used int64, err error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, 0, err
	}
	defer tx.Rollback()
	if pruned, used, err = prune(ctx, tx, student, quota, note); err != nil {
		return 0, 0, err
	}
	return pruned, used, tx.Commit()
}

// querier is a transaction or the database: what the steps of a transaction (prune) run on.
type querier interface {
	execer
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// usage is Usage on q.
func usage(ctx context.Context, q querier, student int64) (int64, error) {
	var n int64
	err := q.QueryRowContext(ctx, "SELECT bytes FROM run_bytes WHERE student = ?", student).Scan(&n)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	return n, err
}

// prune is Prune's work on tx: it returns how many runs it pruned and the usage after.
func prune(ctx context.Context, tx querier, student, quota int64, note string) (pruned int, used int64, err error) {
	if used, err = usage(ctx, tx, student); err != nil || used <= quota {
		return 0, used, err
	}
	var after int64
	for used > quota {
		ids, err := prunable(ctx, tx, student, after, int64(len(note)))
		if err != nil || len(ids) == 0 {
			return pruned, used, err
		}
		for _, id := range ids {
			after = id
			if used <= quota {
				break
			}
			freed, err := pruneRun(ctx, tx, student, id, note)
			if err != nil {
				return pruned, used, err
			}
			if freed != 0 {
				used -= freed
				pruned++
			}
		}
	}
	return pruned, used, nil
}

// prunable lists, oldest first, up to 32 of student's finished, unpruned runs after run id after
// whose non-terminal messages take more than min bytes.
func prunable(ctx context.Context, q querier, student, after, min int64) (ids []int64, err error) {
	rows, err := q.QueryContext(ctx, `SELECT id, b FROM (
		SELECT r.id AS id, (SELECT coalesce(sum(length(m.body)), 0) FROM messages m WHERE m.run = r.id AND m.type NOT IN (?, ?, ?)) AS b
		FROM runs r WHERE r.student = ? AND r.id > ? AND r.pruned = 0 AND r.status IN (?, ?, ?, ?))
		WHERE b > ? ORDER BY id LIMIT 32`, StatusDone, StatusCancelled, StatusError, student, after, StatusDone, StatusCancelled, StatusError, StatusInterrupted, min)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var id, b int64
		if err := rows.Scan(&id, &b); err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}

// pruneRun removes run's non-terminal messages, puts note first and marks it pruned, on tx, and
// returns the bytes that freed (net of note); a run pruned already is left alone (0).
func pruneRun(ctx context.Context, tx querier, student, run int64, note string) (int64, error) {
	res, err := tx.ExecContext(ctx, "UPDATE runs SET pruned = 1 WHERE id = ? AND pruned = 0", run)
	if err != nil {
		return 0, err
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return 0, err
	}
	var size int64
	if err := tx.QueryRowContext(ctx, "SELECT coalesce(sum(length(body)), 0) FROM messages WHERE run = ? AND type NOT IN (?, ?, ?)",
		run, StatusDone, StatusCancelled, StatusError).Scan(&size); err != nil {
		return 0, err
	}
	if _, err := tx.ExecContext(ctx, "DELETE FROM messages WHERE run = ? AND type NOT IN (?, ?, ?)", run, StatusDone, StatusCancelled, StatusError); err != nil {
		return 0, err
	}
	if _, err := tx.ExecContext(ctx, "INSERT INTO messages(run, seq, type, body) VALUES (?, 0, 'note', ?)", run, note); err != nil {
		return 0, err
	}
	freed := size - int64(len(note))
	if err := addBytes(ctx, tx, student, -freed); err != nil {
		return 0, err
	}
	return freed, nil
}

// DiskGuard says when the disk of the data directory is too full for new work: when its free space
// is under Need(total), MinFreePercent of its size kept within MinFreeBytes and MaxFreeBytes, so
// that a small disk is not asked for more than it can spare and a large one not for tens of
// gigabytes.
type DiskGuard struct {
	// Dir is the directory whose file system is checked.
	Dir string
	// Free reports the free (available to this user) and total bytes of dir's file system; nil:
	// never refuse. DiskFree is the real one.
	Free func(dir string) (free, total uint64, err error)
	// MinFreeBytes is the floor, in bytes: new work is refused below it whatever the disk's size.
	MinFreeBytes uint64
	// MaxFreeBytes caps the percentage's share, in bytes (never below MinFreeBytes); 0: no cap.
	MaxFreeBytes uint64
	// MinFreePercent is the free share of the file system, in percent, under which new work is
	// refused (within MinFreeBytes and MaxFreeBytes); zero or negative: MinFreeBytes alone.
	MinFreePercent float64
}

// Need is the free space, in bytes, that g keeps on a file system of total bytes:
// MinFreePercent of total, at least MinFreeBytes and at most MaxFreeBytes (when set). With the
// server's defaults (5 %, 64 MiB, 1 GiB): 95 MiB of a 2 GB disk, 1 GiB of a 1 TB one.
func (g DiskGuard) Need(total uint64) uint64 {
	need := g.MinFreeBytes
	if g.MinFreePercent > 0 {
		need = max(need, uint64(float64(total)*g.MinFreePercent/100))
	}
	if g.MaxFreeBytes > 0 {
		need = min(need, max(g.MaxFreeBytes, g.MinFreeBytes))
	}
	return need
}

// ErrDiskLow is wrapped by the error of work refused because the disk is nearly full (Room).
var ErrDiskLow = errors.New("the server's disk is nearly full")

// SetDiskGuard sets what Room checks; call it once, before the store is used by several goroutines.
func (s *Store) SetDiskGuard(g DiskGuard) { s.guard = g }

// Room returns nil while the data directory's disk has room for new work (runs, joins, edits): at
// least the guard's Need of its size free; otherwise an error wrapping ErrDiskLow that says so and
// what still works. A failing free-space check never refuses.
func (s *Store) Room() error {
	g := s.guard
	if g.Free == nil {
		return nil
	}
	free, total, err := g.Free(g.Dir)
	if err != nil {
		return nil
	}
	need := g.Need(total)
	if free >= need {
		return nil
	}
	return fmt.Errorf("%w (%d MiB free of %d MiB; it keeps at least %d MiB free): new runs, joins and edits are refused until the instructor frees space; everything kept so far can still be read",
		ErrDiskLow, free>>20, total>>20, need>>20)
}

// RunsPage returns up to limit of student's runs with ids after after, oldest first; with lesson
// set, only that lesson's. Paging by after bounds what one call holds in memory.
func (s *Store) RunsPage(ctx context.Context, student int64, lesson string, after int64, limit int) ([]Run, error) {
	q, args := "SELECT "+runColumns+" FROM runs WHERE student = ? AND id > ?", []any{student, after}
	if lesson != "" {
		q, args = q+" AND lesson = ?", append(args, lesson)
	}
	return s.runs(ctx, q+" ORDER BY id LIMIT ?", append(args, limit)...)
}

// LatestRuns returns student's latest run of each cell of lesson, oldest first.
func (s *Store) LatestRuns(ctx context.Context, student int64, lesson string) ([]Run, error) {
	return s.runs(ctx, "SELECT "+runColumns+` FROM runs WHERE id IN
		(SELECT max(id) FROM runs WHERE student = ? AND lesson = ? GROUP BY cell) ORDER BY id`, student, lesson)
}
