package store

import (
	"context"
	"database/sql"
)

// CellMove says that the cell once called From is now cell Cell of lesson Lesson (cell ids are
// unique across the lessons, so From alone finds what is kept of it).
type CellMove struct{ From, Lesson, Cell string }

// Rename moves what the database keeps under former names to the current ones, in one transaction,
// so that a renamed lesson keeps its students' work (lessons.Renamed gives the names): the lesson
// each student opened last and the lesson of every edit and run (lessons: former slug → current),
// then each moved cell's edits and runs (cells). Where a student has an edit under both a cell's
// former and current id, the current one stays (it was made on the renamed lesson, so it is newer)
// and the former is dropped. The students' quota usage (Usage) follows their runs' new names. It
// returns how many rows it changed; run again with the same names, it changes none.
func (s *Store) Rename(ctx context.Context, lessons map[string]string, cells []CellMove) (int64, error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback()
	var changed int64
	exec := func(q string, args ...any) error {
		res, err := tx.ExecContext(ctx, q, args...)
		if err != nil {
			return err
		}
		n, _ := res.RowsAffected()
		changed += n
		return nil
	}
	for old, now := range lessons {
		if err := exec("UPDATE students SET lesson = ? WHERE lesson = ?", now, old); err != nil {
			return 0, err
		}
		if err := exec("UPDATE OR IGNORE edits SET lesson = ? WHERE lesson = ?", now, old); err != nil {
			return 0, err
		}
		// An edit the student already has under the new name was made after the rename: it stays,
		// and the older one, which would otherwise be left under a name no page asks for, goes.
		if err := exec("DELETE FROM edits WHERE lesson = ?", old); err != nil {
			return 0, err
		}
		if err := renameRuns(ctx, tx, "lesson = ?", []any{old}, now, ""); err != nil {
			return 0, err
		}
		if err := exec("UPDATE runs SET lesson = ? WHERE lesson = ?", now, old); err != nil {
			return 0, err
		}
	}
	for _, m := range cells {
		elsewhere := "cell = ? AND NOT (lesson = ? AND cell = ?)"
		args := []any{m.From, m.Lesson, m.Cell}
		if err := exec("UPDATE OR IGNORE edits SET lesson = ?, cell = ? WHERE "+elsewhere, append([]any{m.Lesson, m.Cell}, args...)...); err != nil {
			return 0, err
		}
		if err := exec("DELETE FROM edits WHERE "+elsewhere, args...); err != nil {
			return 0, err
		}
		if err := renameRuns(ctx, tx, elsewhere, args, m.Lesson, m.Cell); err != nil {
			return 0, err
		}
		if err := exec("UPDATE runs SET lesson = ?, cell = ? WHERE "+elsewhere, append([]any{m.Lesson, m.Cell}, args...)...); err != nil {
			return 0, err
		}
	}
	return changed, tx.Commit()
}

// renameRuns adds to each student's usage what the runs matching where (with args) will take
// once their lesson is lesson and, unless cell is "", their cell is cell (runBytes counts both).
func renameRuns(ctx context.Context, tx *sql.Tx, where string, args []any, lesson, cell string) error {
	grow := "length(?) - length(lesson)"
	qargs := []any{lesson}
	if cell != "" {
		grow += " + length(?) - length(cell)"
		qargs = append(qargs, cell)
	}
	rows, err := tx.QueryContext(ctx, "SELECT student, sum("+grow+") FROM runs WHERE "+where+" GROUP BY student", append(qargs, args...)...)
	if err != nil {
		return err
	}
	type delta struct{ student, n int64 }
	var ds []delta
	for rows.Next() {
		var d delta
		if err := rows.Scan(&d.student, &d.n); err != nil {
			rows.Close()
			return err
		}
		ds = append(ds, d)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for _, d := range ds {
		if err := addBytes(ctx, tx, d.student, d.n); err != nil {
			return err
		}
	}
	return nil
}
