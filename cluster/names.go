package cluster

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// Names are the NATS names of one deployment (one front server and its workers): every stream,
// consumer (within its stream), key-value bucket and subject of the wire carries its prefix, so that
// several fronts, each with its own workers, share one NATS server without touching each other's
// jobs, machines, epochs or give-ups (docs/protocol.md, "Workers"). With the default prefix,
// DefaultPrefix, the names are PLAYGROUND_JOBS, PLAYGROUND_GIVEN_UP and playground.….
type Names struct{ prefix string }

// DefaultPrefix is the prefix of the embedded NATS server's names, and a worker's default.
const DefaultPrefix = "playground"

// prefixPattern is what a prefix may be: a NATS subject token and, upper-cased, part of a stream
// and bucket name; lower case only, so that two prefixes never differ by case alone.
var prefixPattern = regexp.MustCompile(`^[a-z][a-z0-9_-]{0,31}$`)

// NewNames checks prefix (-nats-prefix) and returns its names.
func NewNames(prefix string) (Names, error) {
	if !prefixPattern.MatchString(prefix) {
		return Names{}, fmt.Errorf("-nats-prefix %q: give 1 to 32 of a-z, 0-9, - and _, starting with a letter", prefix)
	}
	return Names{prefix}, nil
}

// Prefix is the deployment's prefix.
func (n Names) Prefix() string { return n.prefix }

// Stream is the JetStream work-queue stream holding jobs until a worker acknowledges them
// (PLAYGROUND_JOBS by default).
func (n Names) Stream() string { return strings.ToUpper(n.prefix) + "_JOBS" }

// Jobs + worker id is the subject of the jobs routed to that worker; the stream holds Jobs + "*".
func (n Names) Jobs() string { return n.prefix + ".jobs." }

// Hello + worker id carries that worker's Machine, at start and every heartbeat; the server takes
// only a Machine whose ID is the subject's last token, and on the embedded server a worker may
// publish only under its own id (its nkey, checked at connect).
func (n Names) Hello() string { return n.prefix + ".workers.hello." }

// Bye + worker id carries the Machine of a worker that stops cleanly.
func (n Names) Bye() string { return n.prefix + ".workers.bye." }

// Notice + worker id carries what the server tells that worker alone (a notice): that it was
// refused a place, or replaced by a restart of its machine; the worker then stops.
func (n Names) Notice() string { return n.prefix + ".workers.notice." }

// Start carries a server's epoch (a start), when it starts and whenever a worker new to it
// announces itself: a worker stops the jobs it runs for any other epoch (a server before a
// restart), as nobody waits for their events.
func (n Names) Start() string { return n.prefix + ".server.start" }

// Run is the subject of job's events (what "events": worker to server) or browser tasks ("ask": a
// request, worker to server, that hands a task to the page behind the run, cells.Ask, answered
// with an askReply) on worker.
func (n Names) Run(worker, job, what string) string {
	return n.prefix + ".run." + worker + "." + job + "." + what
}

// Bucket is the key-value bucket of the runs the server gave up on and of its epoch (givenup.go;
// PLAYGROUND_GIVEN_UP by default, in the stream "KV_" + Bucket).
func (n Names) Bucket() string { return strings.ToUpper(n.prefix) + "_GIVEN_UP" }

// GivenUp is the subject a put of job's key on worker is published on.
func (n Names) GivenUp(worker, job string) string {
	return "$KV." + n.Bucket() + "." + givenUpKey(worker, job)
}

// GivenUpGet is the JetStream direct-get subject that answers with the last put of job's key on
// worker (or a 404 status).
func (n Names) GivenUpGet(worker, job string) string {
	return "$JS.API.DIRECT.GET.KV_" + n.Bucket() + "." + n.GivenUp(worker, job)
}

// EpochGet is the direct-get subject of the server's epoch (EpochKey).
func (n Names) EpochGet() string {
	return "$JS.API.DIRECT.GET.KV_" + n.Bucket() + ".$KV." + n.Bucket() + "." + EpochKey
}

// derivedPrefix is the default prefix of a front on an external NATS server: "pg-" and the id of
// its data directory dir (8 hex digits made once and kept in dir/nats/deployment-id), so that the
// same front keeps its names across restarts and two fronts with their own data directories never
// share them; with no dir, a new id per start (printed with the worker command).
func derivedPrefix(dir string) (string, error) {
	id := func() string {
		b := make([]byte, 4)
		_, _ = rand.Read(b)
		return hex.EncodeToString(b)
	}
	if dir == "" {
		return "pg-" + id(), nil
	}
	path := filepath.Join(dir, "nats", "deployment-id")
	if b, err := os.ReadFile(path); err == nil {
		if kept := strings.TrimSpace(string(b)); prefixPattern.MatchString("pg-" + kept) {
			return "pg-" + kept, nil
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("the data directory's deployment id: %w", err)
	}
	made := id()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", fmt.Errorf("keeping the data directory's deployment id: %w", err)
	}
	if err := os.WriteFile(path, []byte(made+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("keeping the data directory's deployment id: %w", err)
	}
	return "pg-" + made, nil
}

// keptPrefix is the prefix of the front whose data directory is dir, given is -nats-prefix (""
// when not given): a prefix given is kept in dir/nats/prefix (mode 0600) and returned; none given,
// the one kept from an earlier start, so that a front restarted without the flag keeps the names
// its workers use; "" when there is none (or no dir), for the default.
func keptPrefix(dir, given string) (string, error) {
	if dir == "" {
		return given, nil
	}
	path := filepath.Join(dir, "nats", "prefix")
	b, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("the NATS prefix kept in the data directory: %w", err)
	}
	kept := strings.TrimSpace(string(b))
	if !prefixPattern.MatchString(kept) {
		kept = ""
	}
	if given == "" || given == kept {
		return kept, nil
	}
	if _, err := NewNames(given); err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", fmt.Errorf("keeping the NATS prefix: %w", err)
	}
	if err := os.WriteFile(path, []byte(given+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("keeping the NATS prefix: %w", err)
	}
	return given, nil
}
