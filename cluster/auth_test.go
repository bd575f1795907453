package cluster

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"
)

// newKey makes a worker's user nkey pair and returns it with its public key (the worker's id).
func newKey(t *testing.T) (nkeys.KeyPair, string) {
	t.Helper()
	kp, err := nkeys.CreateUser()
	if err != nil {
		t.Fatal(err)
	}
	pub, err := kp.PublicKey()
	if err != nil {
		t.Fatal(err)
	}
	return kp, pub
}

// The embedded server's port takes no client without the worker token and a worker nkey whose
// signature of the connection's nonce checks out.
func TestPortNeedsTokenAndKey(t *testing.T) {
	c := startCluster(t, Config{Token: "right"})
	kp, pub := newKey(t)
	other, _ := newKey(t)
	for name, opts := range map[string][]nats.Option{
		"no credentials":             {nats.Name("anonymous")},
		"wrong token":                {nats.UserInfo(WorkerUser, "wrong"), nats.Nkey(pub, kp.Sign)},
		"token as auth_token":        {nats.Token("right"), nats.Nkey(pub, kp.Sign)},
		"token without an nkey":      {nats.UserInfo(WorkerUser, "right")},
		"another key's signature":    {nats.UserInfo(WorkerUser, "right"), nats.Nkey(pub, other.Sign)},
		"the server's internal user": {nats.UserInfo("playground", "right"), nats.Nkey(pub, kp.Sign)},
	} {
		if nc, err := nats.Connect(c.WorkerURL(), opts...); err == nil {
			nc.Close()
			t.Errorf("%s: connected", name)
		}
	}
	nc, err := nats.Connect(c.WorkerURL(), nats.UserInfo(WorkerUser, "right"), nats.Nkey(pub, kp.Sign), nats.CustomInboxPrefix(InboxPrefix+pub))
	if err != nil {
		t.Fatalf("with the token and a key: %v", err)
	}
	nc.Close()
}

// A worker that holds the token may do only what its own id allows: it cannot queue jobs, read any
// inbox, cancel or event subject but its own, announce itself as another worker, nor make a
// consumer of another worker's jobs; what it announces under its own id is taken.
func TestWorkerConfinedToItsID(t *testing.T) {
	c := startCluster(t, Config{Token: "tok"})
	kp, me := newKey(t)
	_, victim := newKey(t)
	var mu sync.Mutex
	var violations []string
	nc, err := nats.Connect(c.WorkerURL(), nats.UserInfo(WorkerUser, "tok"), nats.Nkey(me, kp.Sign), nats.CustomInboxPrefix(InboxPrefix+me),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			mu.Lock()
			violations = append(violations, err.Error())
			mu.Unlock()
		}))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()

	hello := func(subject, id, name string) {
		t.Helper()
		data, _ := json.Marshal(Machine{ID: id, Name: name, CPU: "x", Cores: 1})
		if err := nc.Publish(subject, data); err != nil {
			t.Fatal(err)
		}
	}
	forbiddenSubs := []string{"_INBOX.>", InboxPrefix + victim + ".>", dn.GivenUp(victim, "*"), "$KV." + dn.Bucket() + ".>",
		dn.Run(victim, "*", "events"), dn.Run(me, "*", "events"), dn.Hello() + "*"}
	for _, s := range forbiddenSubs {
		if _, err := nc.SubscribeSync(s); err != nil {
			t.Fatal(err)
		}
	}
	forbiddenPubs := []string{dn.Jobs() + me, dn.Jobs() + victim, dn.Run(victim, "j", "events"),
		dn.GivenUp(me, "j"), dn.GivenUpGet(victim, "j"), "$JS.API.DIRECT.GET.KV_" + dn.Bucket(), "$JS.API.STREAM.PURGE.KV_" + dn.Bucket(),
		"$JS.API.CONSUMER.CREATE." + dn.Stream() + "." + consumerName(victim) + "." + dn.Jobs() + victim,
		"$JS.API.CONSUMER.CREATE." + dn.Stream() + "." + consumerName(me) + "." + dn.Jobs() + "*",
		"$JS.API.CONSUMER.MSG.NEXT." + dn.Stream() + "." + consumerName(victim), "$JS.API.STREAM.PURGE." + dn.Stream()}
	for _, s := range forbiddenPubs {
		if err := nc.Publish(s, []byte(`{}`)); err != nil {
			t.Fatal(err)
		}
	}
	hello(dn.Hello()+victim, victim, "impostor")         // forbidden: another's subject
	hello(dn.Hello()+me, victim, "impostor-in-the-body") // allowed subject, another id: ignored
	hello(dn.Hello()+me, me, "honest")
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	want := len(forbiddenSubs) + len(forbiddenPubs) + 1
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		mu.Lock()
		n := len(violations)
		mu.Unlock()
		if n >= want || time.Now().After(deadline) {
			break
		}
	}
	mu.Lock()
	got := strings.Join(violations, "\n")
	n := len(violations)
	for _, v := range violations {
		if !strings.Contains(strings.ToLower(v), "permissions violation") {
			t.Errorf("not a permissions violation: %s", v)
		}
	}
	mu.Unlock()
	if n != want {
		t.Errorf("%d errors, want %d permissions violations:\n%s", n, want, got)
	}
	for _, s := range append(forbiddenSubs, forbiddenPubs...) {
		if !strings.Contains(got, s) {
			t.Errorf("no violation for %s", s)
		}
	}
	waitMachine(t, c, "honest", true)
	for _, m := range c.Machines() {
		if m.ID == victim || strings.HasPrefix(m.Name, "impostor") {
			t.Errorf("the server took %+v, announced under another worker's id", m)
		}
	}
	info, err := c.stream.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs != 0 || info.State.Consumers != 0 {
		t.Errorf("the stream holds %d jobs and %d consumers, want none", info.State.Msgs, info.State.Consumers)
	}
}

// A worker may read and hear its own jobs' keys in the bucket of given-up runs (which it may not
// write: TestWorkerConfinedToItsID), and read the server's epoch there.
func TestWorkerReadsItsOwnGiveUps(t *testing.T) {
	c := startCluster(t, Config{Token: "tok"})
	kp, me := newKey(t)
	nc, err := nats.Connect(c.WorkerURL(), nats.UserInfo(WorkerUser, "tok"), nats.Nkey(me, kp.Sign), nats.CustomInboxPrefix(InboxPrefix+me))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	r := &runner{nc: nc, names: dn, me: Machine{ID: me}}
	heard, err := nc.SubscribeSync(dn.GivenUp(me, "j1"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if gaveUp, err := r.lookUp(ctx, "j1"); gaveUp || err != nil {
		t.Errorf("its own job's key before the give-up: %v, %v; want none", gaveUp, err)
	}
	if _, err := c.givenUp.Put(ctx, givenUpKey(me, "j1"), []byte("given up")); err != nil {
		t.Fatal(err)
	}
	if gaveUp, err := r.lookUp(ctx, "j1"); !gaveUp || err != nil {
		t.Errorf("its own job's key after the give-up: %v, %v; want given up", gaveUp, err)
	}
	if _, err := heard.NextMsgWithContext(ctx); err != nil {
		t.Errorf("the worker did not hear its own job's give-up: %v", err)
	}
	if epoch, ok := r.serverEpoch(ctx); !ok || epoch != c.epoch {
		t.Errorf("the server's epoch as the worker reads it: %q, %v; want %q", epoch, ok, c.epoch)
	}
}

// A generated worker token is kept with the data directory, so the workers that joined with it
// rejoin after a restart; without one each start makes a new token.
func TestGeneratedTokenKeptWithData(t *testing.T) {
	dir := t.TempDir()
	first, err := keptToken(dir)
	if err != nil {
		t.Fatal(err)
	}
	again, err := keptToken(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(first) < 32 || again != first {
		t.Errorf("tokens %q then %q: want the same random one, kept", first, again)
	}
	if fi, err := os.Stat(filepath.Join(dir, "nats", "worker-token")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("the kept token's file: %v, %v; want mode 0600", fi, err)
	}
	a, _ := keptToken("")
	b, _ := keptToken("")
	if a == b || len(a) < 32 {
		t.Errorf("without a data directory: %q then %q, want two random tokens", a, b)
	}
}
