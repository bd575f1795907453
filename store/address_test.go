package store

import (
	"context"
	"errors"
	"slices"
	"testing"
)

// A student's join address is kept (for the instructor); blocking an address removes the students
// who joined from it (not instructors, not those of other addresses) and refuses new students from
// it until it is unblocked; an instructor still joins from it.
func TestBlockAddress(t *testing.T) {
	ctx := context.Background()
	s, err := Open("")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	join := func(name, addr string, instructor bool) (Student, error) {
		return s.Join(ctx, name, "sess-"+name, addr, instructor, 0)
	}
	for _, name := range []string{"bot1", "bot2"} {
		if _, err := join(name, "203.0.113.9", false); err != nil {
			t.Fatal(err)
		}
	}
	ada, err := join("Ada", "198.51.100.1", false)
	if err != nil {
		t.Fatal(err)
	}
	teacher, err := join("Teacher", "203.0.113.9", true)
	if err != nil {
		t.Fatal(err)
	}
	if got, ok, err := s.StudentByID(ctx, ada.ID); err != nil || !ok || got.Address != "198.51.100.1" {
		t.Fatalf("Ada's address: got %q (%v %v), want 198.51.100.1", got.Address, ok, err)
	}
	removed, err := s.Block(ctx, "203.0.113.9")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := len(removed), 2; got != want {
		t.Errorf("Block removed %d students, want %d (bot1, bot2)", got, want)
	}
	for _, name := range []string{"bot1", "bot2"} {
		if _, ok, _ := s.StudentBySession(ctx, "sess-"+name); ok {
			t.Errorf("%s's session signs in after their address was blocked", name)
		}
	}
	for _, st := range []Student{ada, teacher} {
		if _, ok, _ := s.StudentBySession(ctx, "sess-"+st.Name); !ok {
			t.Errorf("%s was removed by blocking another address or as an instructor", st.Name)
		}
	}
	if _, err := join("bot3", "203.0.113.9", false); !errors.Is(err, ErrBlocked) {
		t.Errorf("a student from a blocked address: got %v, want ErrBlocked", err)
	}
	if _, err := join("Teacher2", "203.0.113.9", true); err != nil {
		t.Errorf("an instructor from a blocked address: %v", err)
	}
	if got, err := s.BlockedAddresses(ctx); err != nil || !slices.Equal(got, []string{"203.0.113.9"}) {
		t.Errorf("BlockedAddresses: got %v %v", got, err)
	}
	if ok, err := s.Unblock(ctx, "203.0.113.9"); err != nil || !ok {
		t.Fatalf("Unblock: %v %v", ok, err)
	}
	if _, err := join("bot3", "203.0.113.9", false); err != nil {
		t.Errorf("a student after the address was unblocked: %v", err)
	}
	if ok, _ := s.Unblock(ctx, "203.0.113.9"); ok {
		t.Error("unblocking twice: got ok")
	}
}
