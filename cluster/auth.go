package cluster

import (
	"crypto/subtle"
	"encoding/base64"

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
			InboxPrefix + id + ".>", n.GivenUp(id, "*"), n.Start(),
		}},
	}
}
