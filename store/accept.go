package store

import (
	"context"
	"fmt"
)

// Request is what one request for a run leaves in the store (Accept): the student's source of the
// cell and, unless the request was refused before, the run, queued.
type Request struct {
	// Student asks for a run of Cell of Lesson with Source. Edited says that Source differs from the
	// lesson's: it is kept as the student's edit of the cell; otherwise their edit is forgotten
	// (the lesson's source is back).
	Student      int64
	Lesson, Cell string
	Source       string
	Edited       bool
	// Run, if not nil, is the run to record, queued (as AddRun does), of Student; nil records the
	// edit alone (a request refused before it got this far).
	Run *Run
	// Quota is what Student may keep, in bytes; negative: no limit. Before Run is recorded the
	// student's oldest finished runs are pruned to fit it (as Prune does, leaving PrunedNote), and
	// Run is refused (*OverQuotaError) if what is left is still over it.
	Quota      int64
	PrunedNote string
	// Admit, if not nil, is called once the quota allows Run, just before Run is recorded: an error
	// refuses Run and is Accept's. It runs inside the transaction, which holds the store's one
	// connection: it must not use the store.
	Admit func() error
}

// OverQuotaError refuses a run whose student's kept runs take more than their quota even after
// pruning (Accept).
type OverQuotaError struct {
	Used, Quota int64 // bytes
}

func (e *OverQuotaError) Error() string {
	return fmt.Sprintf("the student's kept runs take %d bytes, over the quota of %d even with their finished runs pruned", e.Used, e.Quota)
}

// Accept records req in one transaction: the edit (kept or forgotten), then, for a Run, the
// pruning the quota asks for, the quota's check, req.Admit, and the run with its bytes; it returns
// the run with its id. A failure leaves the store as it was. A refusal (*OverQuotaError, or
// Admit's error) still keeps the edit and what was pruned, as a request refused before (Run nil)
// keeps its edit; the run is then not recorded. While the disk is nearly full nothing is recorded
// (Room's error).
func (s *Store) Accept(ctx context.Context, req Request) (Run, error) {
	if err := s.Room(); err != nil {
		return Run{}, err
	}
	if req.Run != nil && req.Run.Student != req.Student {
		return Run{}, fmt.Errorf("a request of student %d for a run of student %d", req.Student, req.Run.Student)
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return Run{}, err
	}
	defer tx.Rollback()
	if req.Edited {
		err = saveEdit(ctx, tx, req.Student, req.Lesson, req.Cell, req.Source)
	} else {
		err = deleteEdit(ctx, tx, req.Student, req.Lesson, req.Cell)
	}
	if err != nil {
		return Run{}, err
	}
	refusal, err := admit(ctx, tx, req)
	if err != nil {
		return Run{}, err
	}
	var r Run
	if refusal == nil && req.Run != nil {
		if r, err = addRun(ctx, tx, *req.Run); err != nil {
			return Run{}, err
		}
	}
	if err := tx.Commit(); err != nil {
		if refusal != nil {
			return Run{}, fmt.Errorf("%w (and the edit was not kept: %v)", refusal, err)
		}
		return Run{}, err
	}
	if refusal != nil {
		return Run{}, refusal
	}
	return r, nil
}

// admit decides, on tx, whether req's Run may be recorded: nil when it may (or req has none), else
// the refusal (*OverQuotaError, or req.Admit's error). err is a failure of the store.
func admit(ctx context.Context, tx querier, req Request) (refusal, err error) {
	if req.Run == nil {
		return nil, nil
	}
	if req.Quota >= 0 {
		_, used, err := prune(ctx, tx, req.Student, req.Quota, req.PrunedNote)
		if err != nil {
			return nil, err
		}
		if used > req.Quota {
			return &OverQuotaError{Used: used, Quota: req.Quota}, nil
		}
	}
	if req.Admit != nil {
		if err := req.Admit(); err != nil {
			return err, nil
		}
	}
	return nil, nil
}
