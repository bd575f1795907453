package cluster

import (
	"context"
	"crypto/subtle"
	"encoding/base64"
	"slices"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nkeys"
)

// auth decides who may connect to the embedded NATS server, and with what permissions
// (natsserver.Authentication). Two kinds of client:
//
//   - this server's own in-process connection: user "playground" with a random password made at
//     start; it may do anything;
//   - a worker: user WorkerUser with the worker token as password, and an nkey (the public key
//     of a user key pair it made at start, with its signature of the nonce this connection was
//     sent, as in NATS's nkey authentication). It gets workerPermissions for that key only, so
//     one worker can neither announce itself as another, nor read another's jobs, cancels or
//     replies, nor feed events into another's runs, even though all share one token.
//
// The nonce is sent to every client because the server runs with AlwaysEnableNonce.
type auth struct {
	token, internal string
	names           Names
	// joining, if set, is told of each worker connection authenticated (Cluster.pokeGuard).
	joining func()
}

// Check authenticates c and registers its permissions.
func (a *auth) Check(c natsserver.ClientAuthentication) bool {
	o := c.GetOpts()
	if o == nil || c.Kind() != natsserver.CLIENT {
		return false
	}
	switch o.Username {
	case "playground":
		if !same(o.Password, a.internal) {
			return false
		}
		c.RegisterUser(&natsserver.User{Username: "playground"})
		return true
	case WorkerUser:
		if !same(o.Password, a.token) || !signed(o.Nkey, o.Sig, c.GetNonce()) {
			return false
		}
		c.RegisterUser(&natsserver.User{Username: WorkerUser + "-" + o.Nkey, Permissions: workerPermissions(a.names, o.Nkey)})
		if a.joining != nil {
			a.joining()
		}
		return true
	}
	return false
}

// same compares a password with the expected one in constant time; an empty expected one matches
// nothing.
func same(got, want string) bool {
	return want != "" && subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}

// signed reports whether sig (base64, URL or standard alphabet) is the signature of nonce by the
// user nkey pub.
func signed(pub, sig string, nonce []byte) bool {
	if !nkeys.IsValidPublicUserKey(pub) || len(nonce) == 0 {
		return false
	}
	raw, err := base64.RawURLEncoding.DecodeString(sig)
	if err != nil {
		if raw, err = base64.StdEncoding.DecodeString(sig); err != nil {
			return false
		}
	}
	kp, err := nkeys.FromPublicKey(pub)
	if err != nil {
		return false
	}
	return kp.Verify(nonce, raw) == nil
}

// workerPermissions are all the worker whose id (its public nkey) is id may do on the embedded
// server: announce itself under its id, stream the events of its own jobs and hand their browser
// tasks over, hear the server's starts, make and pull its own consumer of the job stream (filtered to
// its jobs) and acknowledge what it took, read (direct get) and hear the keys of its own jobs in the
// bucket of given-up runs (Names.Bucket) and the server's epoch there (EpochKey), and read replies in
// its own inbox. It may not publish jobs, write
// the bucket, nor touch another worker's subjects or keys. docs/protocol.md ("Workers") lists
// the same subjects for an external NATS server's administrators.
func workerPermissions(n Names, id string) *natsserver.Permissions {
	durable, stream := consumerName(id), n.Stream()
	return &natsserver.Permissions{
		Publish: &natsserver.SubjectPermission{Allow: []string{
			n.Hello() + id, n.Bye() + id,
			n.Run(id, "*", "events"), n.Run(id, "*", "ask"),
			"$JS.API.CONSUMER.CREATE." + stream + "." + durable + "." + n.Jobs() + id,
			"$JS.API.CONSUMER.INFO." + stream + "." + durable,
			"$JS.API.CONSUMER.MSG.NEXT." + stream + "." + durable,
			"$JS.ACK." + stream + "." + durable + ".>",
			n.GivenUpGet(id, "*"), n.EpochGet(),
		}},
		Subscribe: &natsserver.SubjectPermission{Allow: []string{
			InboxPrefix + id + ".>", n.GivenUp(id, "*"), n.Start(), n.Notice() + id,
		}},
	}
}

// Bounds of the workers' connections to the embedded NATS server (sweepConns), besides its MaxConn
// and AuthTimeout: every worker shares the one token, so a holder of it could open connections
// without end, each with a new key; these keep room for a real worker to join whatever it opens.
const (
	// maxPendingConns bounds the worker connections that have not joined (announced themselves and
	// been admitted): past it, the oldest of them are closed. A real worker announces itself a
	// moment after it connects, and once joined its connection is never closed for room.
	maxPendingConns = 32
	// joinWithin is how long a worker connection may stay without joining before it is closed.
	joinWithin = 10 * time.Second
	// maxConnsPerWorker bounds one worker key's connections (a worker holds one; a reconnection may
	// overlap its old one for a moment): the older ones are closed.
	maxConnsPerWorker = 2
	// AuthTimeout is how long the embedded server waits for a client to authenticate before it
	// closes the connection (natsserver.Options.AuthTimeout, seconds).
	AuthTimeout = 1.0
)

// pokeGuard asks the guard of the workers' connections (guardConns) to look at them now.
func (c *Cluster) pokeGuard() {
	select {
	case c.guardPoke <- struct{}{}:
	default:
	}
}

// guardConns runs sweepConns when poked (a worker connection authenticated, a worker refused) and
// twice a second, until ctx ends; only on the embedded server.
func (c *Cluster) guardConns(ctx context.Context) {
	t := time.NewTicker(500 * time.Millisecond)
	defer t.Stop()
	pending := map[uint64]time.Time{}
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-c.guardPoke:
		}
		c.sweepConns(time.Now(), pending)
	}
}

// sweepConns closes the worker connections to the embedded server that may not stay: those of a
// worker refused a place or replaced (told why by a notice, and given a moment to hear it: their
// connection is closed once joinWithin/5 old), those not joined for joinWithin (since, by
// connection id, when a sweep first saw each so: a worker dropped for its silence has as long to
// come back as a new one has to join), all but the newest maxConnsPerWorker of one key, and the
// oldest of those not joined past maxPendingConns. This server's own connection, and workers
// joined, stay.
func (c *Cluster) sweepConns(now time.Time, since map[uint64]time.Time) {
	cz, err := c.ns.Connz(&natsserver.ConnzOptions{Username: true, Limit: MaxNATSConns * 2})
	if err != nil {
		return
	}
	conns := cz.Conns
	slices.SortFunc(conns, func(a, b *natsserver.ConnInfo) int { return b.Start.Compare(a.Start) }) // newest first
	var kick []uint64
	pending := 0
	perKey := map[string]int{}
	open := make(map[uint64]bool, len(conns))
	c.mu.Lock()
	for _, ci := range conns {
		open[ci.Cid] = true
		id := ci.AuthorizedUser
		if !nkeys.IsValidPublicUserKey(id) {
			continue // this server's own, or not authenticated yet (AuthTimeout closes it)
		}
		perKey[id]++
		age := now.Sub(ci.Start)
		switch {
		case perKey[id] > maxConnsPerWorker:
			kick = append(kick, ci.Cid)
		case c.refused[id] != "" || c.replaced[id] != "":
			if age > joinWithin/5 {
				kick = append(kick, ci.Cid)
			}
		case c.workers[id] != nil:
			delete(since, ci.Cid)
		case now.Sub(pendingSince(since, ci.Cid, now)) > joinWithin:
			kick = append(kick, ci.Cid)
		default:
			if pending++; pending > maxPendingConns {
				kick = append(kick, ci.Cid)
			}
		}
	}
	c.mu.Unlock()
	for cid := range since {
		if !open[cid] {
			delete(since, cid)
		}
	}
	for _, cid := range kick {
		_ = c.ns.DisconnectClientByID(cid)
	}
}

// pendingSince is when a sweep first saw the connection cid not joined (now, if this is the first).
func pendingSince(since map[uint64]time.Time, cid uint64, now time.Time) time.Time {
	t, ok := since[cid]
	if !ok {
		since[cid] = now
		return now
	}
	return t
}
