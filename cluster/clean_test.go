package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"

	"github.com/gpuplayground/playground/cells"
	"github.com/gpuplayground/playground/cells/cellstest"
	"github.com/gpuplayground/playground/estimate"
	"github.com/gpuplayground/playground/machine"
)

// printable reports whether s holds only what a console or a page may show of a worker's string:
// graphic characters, and with lines newlines and tabs too.
func printable(s string, lines bool) bool {
	for _, r := range s {
		if !unicode.IsGraphic(r) && !(lines && (r == '\n' || r == '\t')) {
			return false
		}
	}
	return true
}

// helloCluster is a cluster whose announcements a test makes by hand (hello), printing to out.
func helloCluster(t *testing.T, out *syncBuffer) (c *Cluster, hello func(Machine)) {
	t.Helper()
	c, err := Start(context.Background(), Config{Heartbeat: time.Hour, Out: out}) // never stale
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c, func(m Machine) {
		t.Helper()
		data, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		c.hello(&nats.Msg{Subject: dn.Hello() + m.ID, Data: data})
	}
}

// stamped is the date and time an operator's line starts with.
var stamped = regexp.MustCompile(`^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d `)

// A worker's announcement reaches the operator's console and the machine menu cleaned: one line per
// join, no escape sequence, no fake line of its own, and its hardware said to be its claim.
func TestHelloCleansWhatTheWorkerSays(t *testing.T) {
	var out syncBuffer
	c, hello := helloCluster(t, &out)
	hello(Machine{ID: "evil", Name: "\x1b[2J\x1b[Hbox\nmachine joined: gpu-box (class h100", CPU: "EPYC\r\x1b[31m", Cores: -3,
		GPUs: []string{"NVIDIA H100\u202E", strings.Repeat("G", 500)}, Compiler: "NVRTC\x00", Kinds: []string{"matmul\n"}})
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 1 || !stamped.MatchString(lines[0]) || !strings.HasPrefix(lines[0][len(time.DateTime)+1:], "machine joined: ") || !printable(lines[0], false) {
		t.Fatalf("the console got %q, want one printable line stamped with the time, saying the machine joined", out.String())
	}
	ms := c.ListMachines()
	if len(ms) != 1 {
		t.Fatalf("machines %+v, want the one announced", ms)
	}
	got := ms[0]
	for _, s := range []string{got.Name, got.Summary} {
		if !printable(s, false) || strings.Contains(s, "\x1b") {
			t.Errorf("the menu shows %q", s)
		}
	}
	if want := "\uFFFD[2J\uFFFD[Hbox machine joined: gpu-box (class h100"; got.Name != want {
		t.Errorf("name %q, want %q", got.Name, want)
	}
	if !strings.Contains(got.Summary, "claimed by worker "+got.Name+": EPYC") || !strings.Contains(got.Summary, "0 cores") {
		t.Errorf("summary %q, want the hardware claimed by the worker, 0 cores", got.Summary)
	}
	if m := c.Machines()[0]; len(m.GPUs[1]) > 4*maxFieldLen || m.Kinds[0] != "matmul " {
		t.Errorf("GPUs %q, kinds %q: want each cut to %d runes and on one line", m.GPUs, m.Kinds, maxFieldLen)
	}
}

// No worker passes for this server or for another machine by its name: the second of a name, and one
// that says it is this server, are told apart by their ids in results, the menu and the console.
func TestWorkerNamesAreTheirOwn(t *testing.T) {
	var out syncBuffer
	c, hello := helloCluster(t, &out)
	hello(Machine{ID: "UAAAAAAAAAAAAONE", Name: "gpu-box"})
	hello(Machine{ID: "UBBBBBBBBBBBBTWO", Name: "GPU-box"})
	hello(Machine{ID: "UCCCCCCCCCCCCTHREE", Name: "host (This Server)"})
	var got []string
	for _, m := range c.ListMachines() {
		got = append(got, m.Name)
	}
	want := []string{"GPU-box [UBBBBBBBBBBB]", "gpu-box", "host (a worker) [UCCCCCCCCCCC]"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("names %q, want %q", got, want)
	}
	if s := out.String(); strings.Contains(strings.ToLower(s), "this server") {
		t.Errorf("the console says a worker is this server: %q", s)
	}
}

// Whatever strings a worker streams into a run reach the page cleaned; a note's level is one the page
// knows; what the worker says of "this server" is said of it; a result's row keeps its numbers.
func TestRelayCleansWorkerStrings(t *testing.T) {
	rec := &cellstest.Recorder{}
	esc := "\x1b[2J\u202E"
	for _, ev := range []machine.Event{
		{Type: machine.TypeNote, Body: machine.Body{Note: &cells.Note{Level: "modal overlay", Message: "Measured on THIS SERVER" + esc + "\nline 2"}}},
		{Type: machine.TypeTable, Body: machine.Body{Table: &cells.Table{ID: "results" + esc, Caption: "Measured on this server just now" + esc,
			Columns: []cells.Column{{Label: "kernel\n", Unit: "GFLOP/s" + esc}}}}},
		{Type: machine.TypeRow, Body: machine.Body{Row: &cells.Row{Table: "results", Values: []any{"naive" + esc, 999999.0, nil, map[string]any{"k\n": []any{"v" + esc}}}}}},
		{Type: machine.TypeText, Body: machine.Body{Text: &cells.Text{Title: "PTX" + esc, Body: "line 1\r\nline 2\x1b[0m"}}},
		{Type: machine.TypeFrames, Body: machine.Body{Frames: []any{map[string]any{"kind": "global load" + esc, "n": 4.0}}}},
		{Type: machine.TypeProgress, Body: machine.Body{Progress: &machine.Progress{Done: -1, Total: -5}}},
	} {
		relay(ev, rec, "gpu-box")
	}
	if len(rec.Notes) != 1 || len(rec.Tables) != 1 || len(rec.Rows) != 1 || len(rec.Texts) != 1 || len(rec.Animation) != 1 {
		t.Fatalf("recorded %+v", rec)
	}
	note, table, row, text := rec.Notes[0], rec.Tables[0], rec.Rows[0], rec.Texts[0]
	if got, want := note.Level, "info"; got != want {
		t.Errorf("note level %q, want %q", got, want)
	}
	if got, want := note.Message, "Measured on the machine gpu-box\uFFFD[2J\uFFFD\nline 2"; got != want {
		t.Errorf("note %q, want %q", got, want)
	}
	if got, want := table.Caption, "Measured on the machine gpu-box just now\uFFFD[2J\uFFFD"; got != want {
		t.Errorf("caption %q, want %q", got, want)
	}
	strs := []string{table.ID, table.Columns[0].Label, table.Columns[0].Unit, row.Values[0].(string), text.Title,
		fmt.Sprint(row.Values[3]), fmt.Sprint(rec.Animation[0])}
	for _, s := range strs {
		if !printable(s, false) {
			t.Errorf("%q reached the page", s)
		}
	}
	if got, want := text.Body, "line 1\nline 2\uFFFD[0m"; got != want {
		t.Errorf("text body %q, want %q", got, want)
	}
	if row.Values[1] != 999999.0 || row.Values[2] != nil {
		t.Errorf("row values %v: want the numbers and nulls as sent", row.Values)
	}
	if got, want := rec.Done, [2]int{0, 0}; got != want {
		t.Errorf("progress %v, want %v", got, want)
	}
}

// One holder of the worker token cannot fill the table of machines: at most MaxPerAddress workers
// join from one address, the next is refused with its name and why on the operator's console (once,
// however often it announces itself); it is told why (its notice) and its connection is closed;
// connected again, it joins at its next announcement once one has left.
func TestMachinesPerAddress(t *testing.T) {
	t.Parallel()
	var out syncBuffer
	// The fakes announce themselves once: an hour's heartbeat keeps them.
	c, err := Start(context.Background(), Config{Listen: "127.0.0.1:0", Heartbeat: time.Hour, Settle: -1, Token: "tok", Out: &out})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	type fake struct {
		nc    *nats.Conn
		hello []byte
		id    string
	}
	connect := func(kp nkeys.KeyPair, id string, opts ...nats.Option) *nats.Conn {
		t.Helper()
		opts = append(opts, nats.UserInfo(WorkerUser, "tok"), nats.Nkey(id, kp.Sign), nats.CustomInboxPrefix(InboxPrefix+id), nats.NoReconnect())
		nc, err := nats.Connect(c.WorkerURL(), opts...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		return nc
	}
	var fakes []fake
	var lastKey nkeys.KeyPair
	closed := make(chan struct{})
	for i := range MaxPerAddress + 1 {
		kp, id := newKey(t)
		var opts []nats.Option
		if i == MaxPerAddress {
			lastKey = kp
			opts = append(opts, nats.ClosedHandler(func(*nats.Conn) { close(closed) }))
		}
		nc := connect(kp, id, opts...)
		data, _ := json.Marshal(Machine{ID: id, Name: fmt.Sprintf("fake-%d", i), CPU: "x", Cores: 1, GPUs: []string{"H100"}, Slots: 256})
		fakes = append(fakes, fake{nc, data, id})
	}
	refused := &fakes[MaxPerAddress]
	notices, err := refused.nc.SubscribeSync(dn.Notice() + refused.id)
	if err != nil {
		t.Fatal(err)
	}
	announce := func(f fake) {
		t.Helper()
		if err := f.nc.Publish(dn.Hello()+f.id, f.hello); err != nil {
			t.Fatal(err)
		}
		if err := f.nc.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range fakes {
		announce(f)
	}
	last := fmt.Sprintf("fake-%d", MaxPerAddress)
	waitOut := func(want string, n int) {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); strings.Count(out.String(), want) < n; time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("the console has %q, want %d lines with %q", out.String(), n, want)
			}
		}
	}
	waitOut("machine joined: fake-", MaxPerAddress)
	waitOut("machine refused: "+last+" (", 1)
	again := fakes[MaxPerAddress] // its next heartbeat, handled now: it is not told again
	c.hello(&nats.Msg{Subject: dn.Hello() + again.id, Data: again.hello})
	if got := len(c.Machines()); got != MaxPerAddress {
		t.Errorf("%d machines, want %d", got, MaxPerAddress)
	}
	for _, m := range c.ListMachines() {
		if m.Name == last {
			t.Errorf("%s joined past the cap", last)
		}
	}
	if got := c.address("UNKNOWN"); got != "" {
		t.Errorf("the address of a worker not connected: %q, want none", got)
	}
	if s := out.String(); !strings.Contains(s, "already joined from 127.0.0.1") || strings.Count(s, "machine refused") != 1 {
		t.Errorf("the console: %q, want the refusal once, with the address", s)
	}
	if msg, err := notices.NextMsg(30 * time.Second); err != nil || !strings.Contains(string(msg.Data), `"refused":"8 machines already joined from 127.0.0.1`) {
		t.Errorf("the refused machine's notice: %v, %v; want why it was refused", msg, err)
	}
	select {
	case <-closed:
	case <-time.After(time.Minute):
		t.Fatal("the refused machine's connection is still open a minute later")
	}
	if err := fakes[0].nc.Publish(dn.Bye()+fakes[0].id, fakes[0].hello); err != nil {
		t.Fatal(err)
	}
	waitOut("machine left: fake-0", 1)
	refused.nc = connect(lastKey, refused.id)
	announce(*refused)
	waitOut("machine joined: "+last+" (", 1)
	c.mu.Lock()
	slots := c.workers[fakes[MaxPerAddress].id].gate.Slots()
	c.mu.Unlock()
	if slots != MaxSlots {
		t.Errorf("a worker announcing 256 slots got %d, want %d", slots, MaxSlots)
	}
}

// One IPv6 host or site (a /64) counts as one address, an IPv4 address however written as itself;
// what is not an IP stays as it is.
func TestAddressOf(t *testing.T) {
	for _, tt := range []struct{ ip, want string }{
		{"127.0.0.1", "127.0.0.1"}, {"10.0.0.5", "10.0.0.5"}, {"::ffff:10.0.0.5", "10.0.0.5"},
		{"2001:db8:1:2:aaaa::1", "2001:db8:1:2::/64"}, {"2001:db8:1:2:bbbb::7", "2001:db8:1:2::/64"}, {"::1", "::/64"}, {"pipe", "pipe"}, {"", ""},
	} {
		if got := addressOf(tt.ip); got != tt.want {
			t.Errorf("addressOf(%q) = %q, want %q", tt.ip, got, tt.want)
		}
	}
}

// A worker's rates price runs only if every number in them is finite and not negative, every
// kernel's points can be interpolated, and no list is longer than maxList: the fitted
// per-instruction costs' inputs (launch times, instruction mixes) included.
func TestCleanRatesRefusesWhatCannotPrice(t *testing.T) {
	good := func() *estimate.Rates {
		return &estimate.Rates{SIMTLaunch: map[string]float64{"naive": 0.2}, SIMTMix: map[string][estimate.NumInstrClasses]float64{"naive": {1e6, 0, 3e6}}}
	}
	if cleanRates(good()) == nil {
		t.Fatalf("good rates refused")
	}
	nan := good()
	nan.SIMTLaunch["naive"] = math.NaN()
	negative := good()
	negative.SIMTMix["smem"] = [estimate.NumInstrClasses]float64{-1}
	long := good()
	for i := range maxList + 1 {
		long.SIMTLaunch[fmt.Sprint(i)] = 1
	}
	// kernel points the estimate's interpolation (in log n and log cost) cannot use: a size below 1,
	// sizes not increasing, a cost of 0
	points := func(pts ...estimate.Point) *estimate.Rates {
		r := good()
		r.Kernels = map[string][]estimate.Point{"naive/float32": pts}
		return r
	}
	if cleanRates(points(estimate.Point{N: 64, SPF: 1e-9}, estimate.Point{N: 128, SPF: 2e-9})) == nil {
		t.Fatalf("good kernel points refused")
	}
	for name, r := range map[string]*estimate.Rates{"NaN launch time": nan, "negative mix": negative, "too many launches": long,
		"size 0": points(estimate.Point{N: 0, SPF: 1e-9}), "sizes repeated": points(estimate.Point{N: 64, SPF: 1e-9}, estimate.Point{N: 64, SPF: 2e-9}),
		"cost 0": points(estimate.Point{N: 64, SPF: 0})} {
		if cleanRates(r) != nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
