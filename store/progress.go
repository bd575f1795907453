package store

import "context"

// LessonCount is a count of one student's on one lesson.
type LessonCount struct {
	Student int64
	Lesson  string
	N       int
}

// CellsDone counts, per student and lesson, the distinct cells of which the student has a run
// that ended done (cell actions, such as Show PTX, not counted).
func (s *Store) CellsDone(ctx context.Context) ([]LessonCount, error) {
	return s.lessonCounts(ctx, `SELECT student, lesson, count(DISTINCT cell) FROM runs
		WHERE status = ? AND action = '' GROUP BY student, lesson`, StatusDone)
}

// SaveAnswer records whether a student's latest answer to a question (key, one of the lesson's
// answer keys) was right, replacing what was recorded before.
func (s *Store) SaveAnswer(ctx context.Context, student int64, lesson, key string, right bool) error {
	_, err := s.db.ExecContext(ctx, `INSERT INTO answers(student, lesson, question, correct, updated) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT(student, lesson, question) DO UPDATE SET correct = excluded.correct, updated = excluded.updated`,
		student, lesson, key, right, now())
	return err
}

// Answer is a question a student last answered right (SaveAnswer).
type Answer struct {
	Student          int64
	Lesson, Question string
}

// RightAnswers lists, per student and lesson, the questions whose latest recorded answer was right
// (SaveAnswer), by student, lesson and question.
func (s *Store) RightAnswers(ctx context.Context) ([]Answer, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT student, lesson, question FROM answers WHERE correct = 1 ORDER BY student, lesson, question")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Answer
	for rows.Next() {
		var a Answer
		if err := rows.Scan(&a.Student, &a.Lesson, &a.Question); err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, rows.Err()
}

func (s *Store) lessonCounts(ctx context.Context, q string, args ...any) ([]LessonCount, error) {
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []LessonCount
	for rows.Next() {
		var c LessonCount
		if err := rows.Scan(&c.Student, &c.Lesson, &c.N); err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, rows.Err()
}
