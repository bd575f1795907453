package gpu

import (
	"sync"
	"testing"
	"time"
)

// fakeClock is a clock whose time moves only when a test calls Advance, so a time limit fires
// exactly when the test says and never because the machine is busy.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Duration
	timers []*fakeTimer
	made   chan struct{} // closed and replaced whenever a timer is made
}

type fakeTimer struct {
	clock    *fakeClock
	c        chan time.Time
	deadline time.Duration
	active   bool
}

func newFakeClock() *fakeClock { return &fakeClock{made: make(chan struct{})} }

func (c *fakeClock) NewTimer(d time.Duration) timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &fakeTimer{clock: c, c: make(chan time.Time, 1), deadline: c.now + d, active: true}
	c.timers = append(c.timers, t)
	close(c.made)
	c.made = make(chan struct{})
	return t
}

func (t *fakeTimer) C() <-chan time.Time { return t.c }

// Reset and Stop drain the channel, as *time.Timer's do since Go 1.23.
func (t *fakeTimer) Reset(d time.Duration) {
	t.clock.mu.Lock()
	defer t.clock.mu.Unlock()
	t.drain()
	t.deadline, t.active = t.clock.now+d, true
}

func (t *fakeTimer) Stop() {
	t.clock.mu.Lock()
	defer t.clock.mu.Unlock()
	t.drain()
	t.active = false
}

func (t *fakeTimer) drain() {
	select {
	case <-t.c:
	default:
	}
}

// Advance moves the clock on by d, fires every timer whose deadline has come, and says whether any
// did.
func (c *fakeClock) Advance(d time.Duration) (fired bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now += d
	for _, t := range c.timers {
		if t.active && t.deadline <= c.now {
			t.active, fired = false, true
			t.c <- time.Unix(0, 0).Add(c.now)
		}
	}
	return fired
}

// waitTimers waits until n timers have been made (Do makes one right after sending its request).
// The 30 s bound only turns a broken test into a failure instead of a hang; it is no time budget.
func (c *fakeClock) waitTimers(t *testing.T, n int) {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		c.mu.Lock()
		got, made := len(c.timers), c.made
		c.mu.Unlock()
		if got >= n {
			return
		}
		select {
		case <-made:
		case <-deadline:
			t.Fatalf("waited 30 s for timer %d of the request; %d made", n, got)
		}
	}
}
