package store

import (
	"context"
	"errors"
)

// ErrBlocked is returned by Join when the instructor blocked the address a student joins from.
var ErrBlocked = errors.New("joins from this address were blocked by the instructor")

// Block blocks address (Join refuses students from it, not instructors) and removes every student
// not removed yet who joined from it, as RemoveStudent does (instructors stay), in one transaction.
// It returns the ids of the students it removed. Blocking an address blocked already removes those
// who joined from it since (none: Join refuses them) and is no error.
func (s *Store) Block(ctx context.Context, address string) (removed []int64, err error) {
	if address == "" {
		return nil, errors.New("no address to block")
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	t := now()
	if _, err := tx.ExecContext(ctx, "INSERT INTO blocked_addresses(address, at) VALUES (?, ?) ON CONFLICT(address) DO NOTHING", address, t); err != nil {
		return nil, err
	}
	rows, err := tx.QueryContext(ctx, "SELECT id FROM students WHERE address = ? AND removed = 0 AND instructor = 0 ORDER BY id", address)
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return nil, err
		}
		removed = append(removed, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	for _, id := range removed {
		if _, err := tx.ExecContext(ctx, "UPDATE students SET session = "+revokedSession+`, removed = ?,
			name = name || ' (removed ' || id || ')' WHERE id = ?`, t, t, id); err != nil {
			return nil, err
		}
	}
	return removed, tx.Commit()
}

// Unblock lets students join from address again; ok is false when it was not blocked. The
// students Block removed stay removed.
func (s *Store) Unblock(ctx context.Context, address string) (ok bool, err error) {
	res, err := s.db.ExecContext(ctx, "DELETE FROM blocked_addresses WHERE address = ?", address)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n > 0, err
}

// BlockedAddresses lists the blocked addresses, in the order they were blocked.
func (s *Store) BlockedAddresses(ctx context.Context) ([]string, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT address FROM blocked_addresses ORDER BY at, address")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var a string
		if err := rows.Scan(&a); err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, rows.Err()
}
