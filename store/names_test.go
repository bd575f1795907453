package store

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"testing"
)

func TestNameKey(t *testing.T) {
	for _, tt := range []struct{ a, b string }{
		{"álice", "ÁLICE"},
		{"Ada", "ａｄａ"},
		{"Straße", "STRASSE"},
		{"Ada  Lovelace", "ada lovelace"},
		{"ﬁona", "FIONA"},
	} {
		if got, want := NameKey(tt.a), NameKey(tt.b); got != want {
			t.Errorf("NameKey(%q) = %q, NameKey(%q) = %q: want equal", tt.a, got, tt.b, want)
		}
	}
	if NameKey("alice") == NameKey("\u0430lice") {
		t.Error("NameKey maps a Cyrillic а to a Latin a: it folds case, not scripts")
	}
}

// Join refuses names equal under NameKey and students past the class size (not instructors); a
// removed student frees their place and name, and their session signs nobody in.
func TestJoinRemoveRevoke(t *testing.T) {
	ctx := context.Background()
	s, err := Open("")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ada, err := s.Join(ctx, "Ada", "sess-a", "", false, 2)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Join(ctx, "ＡＤＡ", "sess-x", "", false, 2); !errors.Is(err, ErrNameTaken) {
		t.Errorf("ＡＤＡ after Ada: got %v, want ErrNameTaken", err)
	}
	if _, err := s.Join(ctx, "Bob", "sess-b", "", false, 2); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Join(ctx, "Cy", "sess-c", "", false, 2); !errors.Is(err, ErrClassFull) {
		t.Errorf("a third student of 2: got %v, want ErrClassFull", err)
	}
	if _, err := s.Join(ctx, "Teacher", "sess-t", "", true, 2); err != nil {
		t.Errorf("an instructor in a full class: %v", err)
	}
	if got, ok, err := s.StudentBySession(ctx, "sess-a"); err != nil || !ok || got.SessionAt.IsZero() {
		t.Fatalf("Ada's session: %+v %v %v", got, ok, err)
	}
	gone, ok, err := s.RemoveStudent(ctx, ada.ID)
	if err != nil || !ok || !gone.Removed || gone.Name != "Ada (removed 1)" {
		t.Fatalf("RemoveStudent: got %+v %v %v, want Ada (removed 1), removed", gone, ok, err)
	}
	if _, ok, _ := s.RemoveStudent(ctx, ada.ID); ok {
		t.Error("removing Ada twice: got ok")
	}
	if _, ok, _ := s.StudentBySession(ctx, "sess-a"); ok {
		t.Error("a removed student's session still signs in")
	}
	if _, err := s.Join(ctx, "ada", "sess-a2", "", false, 2); err != nil {
		t.Errorf("Ada's name and place after her removal: %v", err)
	}
	bob, _, _ := s.StudentBySession(ctx, "sess-b")
	if ok, err := s.RevokeSession(ctx, bob.ID); err != nil || !ok {
		t.Fatalf("RevokeSession: %v %v", ok, err)
	}
	if _, ok, _ := s.StudentBySession(ctx, "sess-b"); ok {
		t.Error("a revoked session still signs in")
	}
}

// A database made before name keys opens even with names that now collide (both stay); new joins
// compare against every key, and old sessions count from when their student joined.
func TestOldDatabaseGainsNameKeys(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, FileName))
	if err != nil {
		t.Fatal(err)
	}
	old := `CREATE TABLE students (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE COLLATE NOCASE, session TEXT NOT NULL UNIQUE,
		instructor INTEGER NOT NULL DEFAULT 0, created INTEGER NOT NULL, last_seen INTEGER NOT NULL, lesson TEXT NOT NULL DEFAULT '');
	INSERT INTO students VALUES (1, 'álice', ?, 0, 1000, 1000, '');
	INSERT INTO students VALUES (2, 'ÁLICE', 'y', 0, 2000, 2000, '');`
	if _, err := db.Exec(old, SessionHash("sess-1")); err != nil {
		t.Fatal(err)
	}
	db.Close()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	sts, err := s.Students(ctx)
	if err != nil || len(sts) != 2 {
		t.Fatalf("students: %+v %v, want both", sts, err)
	}
	if _, err := s.AddStudent(ctx, "Álice", "sess-3", false); !errors.Is(err, ErrNameTaken) {
		t.Errorf("Álice in the old class: got %v, want ErrNameTaken", err)
	}
	st, ok, err := s.StudentBySession(ctx, "sess-1")
	if err != nil || !ok || st.SessionAt.UnixMilli() != 1000 {
		t.Errorf("the old session: %+v %v %v, want issued when álice joined (1000 ms)", st, ok, err)
	}
}
