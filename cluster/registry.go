package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/gpuplayground/playground/cells"
	"github.com/gpuplayground/playground/estimate"
	"github.com/gpuplayground/playground/internal/untrusted"
	"github.com/gpuplayground/playground/machine"
)

// worker is a machine as the server knows it.
type worker struct {
	m     Machine
	asked string // the name it asked for (m.Name may have its id added: uniqueName)
	local bool
	seen  time.Time // last announcement
	// gate is the one-machine rule for it: what runs there, as this server reserved it (its slots:
	// Machine.Slots, capped).
	gate  *machine.Gate
	addr  string    // the network address it joined from ("" when unknown: Cluster.address)
	freed time.Time // when its last run ended, to spread runs over free machines
	gone  chan struct{}
	// runs are the runs on it now, for the operator (ListMachines); done and errors count the
	// runs that ended there, and those that ended with an error (not a cancel nor the time limit).
	runs         map[*machine.MachineRun]bool
	done, errors int
	// rates are the rates it last reported (cleaned; nil: none), and kinds the server's kinds pricing
	// runs with them, built when first needed (Cluster.Estimate); ratesGen counts the rates it
	// reported again, so that prices kept with older ones no longer place runs (pick).
	rates    *estimate.Rates
	kinds    []cells.Kind
	ratesGen uint64
	// trust is the evidence of its runs against its prices (trust.go), kept for the worker as the
	// operator configured it (trustKey), across its restarts; nil for this server's own. trustKey is
	// "" for a worker whose key another live worker held when it joined: its record is its own,
	// kept under no key (bindTrust).
	trust    *trust
	trustKey string
}

// tracking records, for the operator's list of machines, that the run j runs on w from now; the
// function returned records its end with its error err (ctx is the run's: a cancel or the time
// limit is no error of the machine's).
func (c *Cluster) tracking(ctx context.Context, w *worker, j machine.Job) (end func(err error)) {
	r := &machine.MachineRun{Run: j.Run, Student: j.Student, Lesson: j.Lesson, Cell: j.Cell.ID, Started: time.Now()}
	c.mu.Lock()
	if w.runs == nil {
		w.runs = map[*machine.MachineRun]bool{}
	}
	w.runs[r] = true
	c.mu.Unlock()
	return func(err error) {
		c.mu.Lock()
		defer c.mu.Unlock()
		delete(w.runs, r)
		w.done++
		if err != nil && ctx.Err() == nil && !c.connectionsFault(err, r.Started) {
			w.errors++
		}
	}
}

// connectionsFault reports whether err, the error of a run that started at started, is this
// server's NATS connection's doing rather than the machine's: the run ended for its loss
// (natsLostError), or the connection was lost, or is down, since it started. c.mu is held.
func (c *Cluster) connectionsFault(err error, started time.Time) bool {
	var lost natsLostError
	return errors.As(err, &lost) || !c.downSince.IsZero() || !c.lostAt.Before(started)
}

// tally is what the operator's counts of a machine (worker.done and worker.errors) were when it
// left, kept for its return (Cluster.tallies).
type tally struct{ done, errors int }

// keepTally keeps w's counts for its return (drop); c.mu is held.
func (c *Cluster) keepTally(w *worker) {
	if w.local || w.done == 0 || w.trustKey == "" { // "": a record of its own (bindTrust)
		return
	}
	if c.tallies == nil || len(c.tallies) >= maxWorkers {
		c.tallies = map[string]tally{}
	}
	c.tallies[w.trustKey] = tally{w.done, w.errors}
}

// resumeTally gives the new worker w the counts kept from its last time here, if any; c.mu is held.
func (c *Cluster) resumeTally(w *worker) {
	key := w.trustKey
	if t, ok := c.tallies[key]; ok {
		w.done, w.errors = t.done, t.errors
		delete(c.tallies, key)
	}
}

// Machines lists the workers known now, this server's own first.
func (c *Cluster) Machines() []Machine {
	c.mu.Lock()
	defer c.mu.Unlock()
	var ms []Machine
	if c.local != nil {
		ms = append(ms, c.local.m)
	}
	for _, w := range c.workers {
		if !w.local {
			ms = append(ms, w.m)
		}
	}
	return ms
}

// announced reads the Machine of a hello or bye (prefix): ok only when its ID is the subject's
// last token, which on the embedded server only that worker may publish to.
func announced(msg *nats.Msg, prefix string) (m Machine, ok bool) {
	if json.Unmarshal(msg.Data, &m) != nil || m.ID == "" || msg.Subject != prefix+m.ID {
		return m, false
	}
	return m, true
}

// Caps of the table of machines (hello).
const (
	// maxWorkers bounds the machines one server keeps track of.
	maxWorkers = 1000
	// MaxPerAddress bounds the machines that join from one network address (the source IP of their
	// NATS connections to the embedded server). Every worker shares the one worker token and makes
	// its own nkey, so an address is the only thing one token holder cannot multiply at will: one
	// of them cannot fill the table and leave no room for the real workers.
	MaxPerAddress = 8
)

// hello records a worker's announcement: a new worker joins, a known one stays alive. One whose
// Machine.ID is not its subject's (another worker's, or this server's own) is ignored. A new
// worker's announcement is cleaned (cleanMachine) and its name made unique (uniqueName); one the
// table has no room for (admit) is refused, and the operator told why, once per worker. A worker
// refused or replaced (restartOf) is told so (notice) at each announcement, and its connection to
// the embedded server closed (sweepConns).
func (c *Cluster) hello(msg *nats.Msg) {
	m, ok := announced(msg, c.names.Hello())
	if !ok {
		return
	}
	c.mu.Lock()
	w, refused, replaced := c.workers[m.ID], c.refused[m.ID], c.replaced[m.ID]
	if w != nil {
		w.seen = time.Now()
		if m.Rates != nil { // sent again after a server start: the kinds are built again when needed
			w.rates, w.kinds = cleanRates(m.Rates), nil
			w.ratesGen++
			c.rated(w)
		}
	}
	c.mu.Unlock()
	switch {
	case w != nil:
		return
	case replaced != "":
		c.tell(m.ID, notice{Replaced: replaced})
		return
	case refused != "":
		c.tell(m.ID, notice{Refused: refused})
		return
	}
	addr := c.address(m.ID) // outside c.mu: it asks the embedded NATS server
	m = cleanMachine(m)
	if m.Class != "" && cells.CheckClass(m.Class) != nil { // not one a page or cell could name
		m.Class = ""
	}
	gone := c.disconnected(m, addr) // outside c.mu, as address
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || c.workers[m.ID] != nil {
		return
	}
	asked := m.Name
	if old := c.restartOf(m, addr, gone); old != nil {
		c.replace(old, m)
	}
	m.Name, m.claimed = c.uniqueName(m.Name, m.ID), true
	if why := c.admit(addr); why != "" {
		if c.refused == nil || len(c.refused) >= maxWorkers {
			c.refused = map[string]string{}
		}
		c.refused[m.ID] = why
		c.say("machine refused: %s (worker %s): %s", m.Summary(), shortID(m.ID), why)
		c.tell(m.ID, notice{Refused: why})
		c.pokeGuard()
		return
	}
	// w.m never changes after this: an id is one worker process
	w = &worker{m: m, asked: asked, rates: m.Rates, addr: addr, gate: machine.NewGate(capSlots(m.Slots)), seen: time.Now(), gone: make(chan struct{}),
		trustKey: trustKey(asked, m.Host, addr)}
	c.bindTrust(w)
	c.workers[m.ID] = w
	c.say("machine joined: %s, %d slots", m.Summary(), capSlots(m.Slots))
	c.broadcast()
	// A worker new to this server may have been another's (a restart): it stops that one's jobs.
	c.announce()
}

// replace drops old, which the new worker m restarts (restartOf), and tells old so, should it still
// be alive after all (frozen): it is not heard again, and it exits when it hears. c.mu is held.
func (c *Cluster) replace(old *worker, m Machine) {
	if c.replaced == nil || len(c.replaced) >= maxWorkers {
		c.replaced = map[string]string{}
	}
	why := fmt.Sprintf("a restart of this machine (worker %s, named %s) replaced this worker (%s) on the server", shortID(m.ID), old.asked, shortID(old.m.ID))
	c.replaced[old.m.ID] = why
	c.drop(old, fmt.Sprintf("machine restarted: %s (worker %s replaces worker %s; two live workers on one machine need different -name)",
		old.m.Name, shortID(m.ID), shortID(old.m.ID)))
	c.tell(old.m.ID, notice{Replaced: why})
}

// notice is what the server tells one worker (Names.Notice): that it was refused a place (why), or
// replaced by a restart of its machine (restartOf). Either way the worker stops.
type notice struct {
	Refused  string `json:"refused,omitempty"`
	Replaced string `json:"replaced,omitempty"`
}

// tell sends the worker id the notice n.
func (c *Cluster) tell(id string, n notice) {
	data, _ := json.Marshal(n)
	_ = c.nc.Publish(c.names.Notice()+id, data)
}

// admit says why a new worker joining from addr ("" when unknown) has no room in the table, or ""
// when it has: at most maxWorkers machines, and at most MaxPerAddress from one address. c.mu is held.
func (c *Cluster) admit(addr string) string {
	if len(c.workers) >= maxWorkers {
		return fmt.Sprintf("this server already has %d machines, its most", maxWorkers)
	}
	if addr == "" {
		return ""
	}
	n := 0
	for _, w := range c.workers {
		if w.addr == addr {
			n++
		}
	}
	if n >= MaxPerAddress {
		return fmt.Sprintf("%d machines already joined from %s, the most from one address", n, addr)
	}
	return ""
}

// address is the network address worker id connects to the embedded NATS server from, as
// MaxPerAddress counts it: an IPv4 address, or an IPv6 address's /64 (one host's, or one site's,
// usual share); "" with an external NATS server, or for a connection in process.
func (c *Cluster) address(id string) string {
	if c.ns == nil {
		return ""
	}
	cz, err := c.ns.Connz(&natsserver.ConnzOptions{User: id, Limit: 1})
	if err != nil || len(cz.Conns) == 0 {
		return ""
	}
	return addressOf(cz.Conns[0].IP)
}

// addressOf is the address MaxPerAddress counts for the client IP ip (address).
func addressOf(ip string) string {
	parsed := net.ParseIP(ip)
	switch {
	case parsed == nil:
		return ip
	case parsed.To4() != nil:
		return parsed.To4().String() // ::ffff:10.0.0.5 is 10.0.0.5
	}
	return parsed.Mask(net.CIDRMask(64, 128)).String() + "/64"
}

// uniqueName is name, a new worker's (id), unless a machine known already has it or it claims to be
// this server: then name and the start of the worker's id, so that no worker passes for another
// machine or for this server in results and the machine menu. c.mu is held.
func (c *Cluster) uniqueName(name, id string) string {
	taken := untrusted.ContainsFold(name, "this server")
	for _, w := range c.workers {
		taken = taken || strings.EqualFold(w.m.Name, name)
	}
	if !taken {
		return name
	}
	return untrusted.ReplaceFold(name, "this server", "a worker") + " [" + shortID(id) + "]"
}

// shortID is the start of a worker's id (its public nkey) as the operator sees it.
func shortID(id string) string { return untrusted.Line(id[:min(len(id), 12)], 12) }

// MaxSlots caps the runs that time nothing one worker runs side by side: a worker refuses a larger
// -slots, and the server counts a larger announcement as MaxSlots.
const MaxSlots = 64

// capSlots is how many runs that time nothing the server sends a worker that announced slots at
// once: 1 for none (a worker from before Machine.Slots, which runs one run at a time), at most
// MaxSlots.
func capSlots(slots int) int {
	return min(max(slots, 1), MaxSlots)
}

// bye forgets a worker that stopped cleanly.
func (c *Cluster) bye(msg *nats.Msg) {
	m, ok := announced(msg, c.names.Bye())
	if !ok {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if w := c.workers[m.ID]; w != nil && !w.local {
		c.drop(w, "machine left: "+w.m.Name)
	}
}

// restartOf is the machine known that the new worker m, joining from addr, is a restart of: not
// this server's, with the same name asked for, the same host and the same address, and gone: its
// connection to the embedded NATS server closed (gone, by worker id: disconnected), or silent for
// more than one and a half heartbeats; nil if none. Names and host names are self-reported, and
// machines cloned from one image share theirs: a live worker is never taken for the dead self of
// another, nor evicted by a newcomer that reports its name and host. c.mu is held.
func (c *Cluster) restartOf(m Machine, addr string, gone map[string]bool) *worker {
	if m.Host == "" {
		return nil
	}
	for _, w := range c.workers {
		if !c.namesake(w, m, addr) {
			continue
		}
		if gone[w.m.ID] || time.Since(w.seen) > c.cfg.Heartbeat*3/2 {
			return w
		}
	}
	return nil
}

// namesake reports whether w, a machine known, is one the new worker m joining from addr may be a
// restart of: not this server's, the same name asked for, the same host and address. c.mu is held.
func (c *Cluster) namesake(w *worker, m Machine, addr string) bool {
	return !w.local && w.asked == m.Name && w.m.Host == m.Host && w.addr == addr
}

// disconnected is the set of the ids of the known workers the new worker m joining from addr may
// be a restart of (namesake) whose connections to the embedded NATS server are all closed: a
// worker killed and started again is replaced at once, its old process's TCP connection closed by
// its end. Empty with an external NATS server, or an address unknown: there only silence tells.
// It asks the embedded server: c.mu is not held.
func (c *Cluster) disconnected(m Machine, addr string) map[string]bool {
	if c.ns == nil || addr == "" || m.Host == "" {
		return nil
	}
	var ids []string
	c.mu.Lock()
	for id, w := range c.workers {
		if c.namesake(w, m, addr) {
			ids = append(ids, id)
		}
	}
	c.mu.Unlock()
	gone := map[string]bool{}
	for _, id := range ids {
		cz, err := c.ns.Connz(&natsserver.ConnzOptions{User: id, Limit: 1})
		if err == nil && len(cz.Conns) == 0 {
			gone[id] = true
		}
	}
	return gone
}

// drop forgets w, telling the operator why (a line), tells its runs it is gone, and deletes its
// consumer of the job stream (a restarted worker makes a new one; JetStream would keep the old one
// for its InactiveThreshold); c.mu is held.
func (c *Cluster) drop(w *worker, why string) {
	c.say("%s", why)
	c.keepTally(w)
	delete(c.workers, w.m.ID)
	c.refused = nil // there is room again: the workers refused may join when started again
	close(w.gone)
	c.broadcast()
	if c.closed || c.js == nil {
		return
	}
	c.done.Add(1)
	go func() {
		defer c.done.Done()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := c.js.DeleteConsumer(ctx, c.names.Stream(), consumerName(w.m.ID)); err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
			c.say("could not delete the consumer of the worker %s that left: %v (JetStream deletes it after %s unused)", shortID(w.m.ID), err, inactive)
		}
	}()
}

// say prints a line for the operator (Config.Out), if there is one, stamped with the date and time.
func (c *Cluster) say(format string, args ...any) {
	if c.cfg.Out != nil {
		fmt.Fprintf(c.cfg.Out, "%s "+format+"\n", append([]any{time.Now().Format(time.DateTime)}, args...)...)
	}
}

// broadcast wakes everything waiting for a machine; c.mu is held.
func (c *Cluster) broadcast() {
	close(c.changed)
	c.changed = make(chan struct{})
}

// watchdog drops workers silent for three heartbeats, and puts this server's epoch again every hour
// (the bucket keeps a key givenUpTTL).
func (c *Cluster) watchdog(ctx context.Context) {
	t := time.NewTicker(c.cfg.Heartbeat / 2)
	defer t.Stop()
	epoch := time.NewTicker(time.Hour)
	defer epoch.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-epoch.C:
			pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			if err := c.putEpoch(pctx); err != nil {
				c.say("%v (workers then run every job they get, whichever server queued it)", err)
			}
			cancel()
		case <-t.C:
			c.dropSilent()
		}
	}
}

// dropSilent drops the workers silent for three heartbeats, unless the silence is this server's:
// its own NATS connection is down, or does not answer a ping (a path gone silent with its TCP
// connection open, which the client's pings close as stale within StaleAfter, natsLost). Then no
// worker is dropped nor blamed.
func (c *Cluster) dropSilent() {
	c.mu.Lock()
	var silent []*worker
	for _, w := range c.workers {
		if !w.local && time.Since(w.seen) > 3*c.cfg.Heartbeat {
			silent = append(silent, w)
		}
	}
	down := !c.downSince.IsZero()
	c.mu.Unlock()
	if len(silent) == 0 || down {
		return
	}
	// Outside c.mu: the ping waits for the NATS server's answer.
	if err := c.nc.FlushTimeout(ownPingWait(c.cfg.Heartbeat)); err != nil {
		return // this server cannot hear: asked again at the next tick, or the connection closes as stale
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.downSince.IsZero() {
		return
	}
	for _, w := range silent {
		if since := time.Since(w.seen); c.workers[w.m.ID] == w && since > 3*c.cfg.Heartbeat {
			c.drop(w, fmt.Sprintf("machine left: %s (no announcement for %s; this server's own connection to the NATS server answers)", w.m.Name, since.Round(time.Millisecond)))
		}
	}
}

// ownPingWait is how long the watchdog waits for the NATS server's answer to its own ping before it
// takes a worker's silence for this server's: three heartbeats, at least a second.
func ownPingWait(beat time.Duration) time.Duration { return max(3*beat, time.Second) }
