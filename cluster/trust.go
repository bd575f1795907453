package cluster

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Trust in a worker's prices follows the evidence of its runs. A worker's reported rates are its
// claim; each measuring run on it that ends well is held against its price there (checkPrice) as a
// ratio: the time the run took, from its taken event to its end on this server's clock, less
// overrunSlack for what no price counts (parsing the job again, compiling, the events' trip), per
// second of its price (1: as priced; estimates are meant to be pessimistic, so an honest machine's
// runs stay at or under 1 when it is not loaded).
//
// The same conditions: a measuring run has its worker to itself as far as this server places runs
// (no other run of this server beside it: machine.Gate), so what else slows it is load this server
// cannot see (other programs, other servers' workers on the same host). The nearest runs under the
// same conditions are the same machine's recent runs: a worker is judged by the median ratio of its
// last trustWindow runs, never by one run, so that one run slowed by a moment's load (or by a first
// run's start-up) accuses nobody, and a machine loaded for a while shows it in all its runs alike.
//
//   - unproven: no run yet with its rates (a new worker, or new rates): its prices place no runs and
//     price no learner's estimate, so it gets its share of runs (the machine free longest takes the
//     next) until it has run on price.
//   - on price: the median ratio is at most overrunFactor.
//   - slower than priced: the median is above overrunFactor but within maxLoadRatio, as a loaded
//     machine's runs are (2.4 to 9 times their price were seen with three workers and a front on one
//     host under a class's burst of runs). Not an accusation: its prices are not used while it lasts
//     (the runs say they do not hold now), and it heals as its runs come back on price.
//   - demoted: the median of minDemoteRuns runs or more is above maxLoadRatio, more than load
//     explains: its rates claim it is
//     faster than it runs. It stays demoted, shown with its reason, until healRuns runs in a row run
//     on price, whatever rates it reports meanwhile, and across its restarts.
//
// A record is kept per worker as the operator configured it (trustKey: the name it asks for, its
// host and the address it joins from), not per worker process, whose key is new at every start. The
// name and host are the worker's claims: two live workers never share a record (bindTrust), so that
// one reporting another's name and host cannot spend that one's standing.
const (
	// trustWindow is how many of a worker's recent measuring runs its median ratio is taken over.
	trustWindow = 8
	// maxLoadRatio bounds the median ratio that load explains: above it the worker is demoted.
	maxLoadRatio = 20
	// minDemoteRuns runs at least are the evidence of a demotion: a worker's first run may pay once
	// for what its later ones do not (its GPU worker process starting, its device's context), and
	// until it has run on price its prices are not used anyway.
	minDemoteRuns = 2
	// healRuns on-price runs in a row lift a demotion.
	healRuns = 3
	// maxRatio caps one ratio (a price of 0 makes any overrun infinite), so that it stays a number
	// JSON can carry.
	maxRatio = 1e9
	// maxTrusts bounds the records kept, of workers connected and gone.
	maxTrusts = 4 * maxWorkers
)

// trust is what this server knows of one configured worker's prices (by trustKey), kept across its
// restarts. Guarded by Cluster.mu.
type trust struct {
	// rates fingerprints the rates its ratios were found with: new rates start a new window.
	rates string
	// ratios are its last trustWindow ratios, oldest first.
	ratios []float64
	// onPrice counts its runs on price (ratio ≤ overrunFactor) in a row, up to now.
	onPrice int
	// demoted says why its prices are not used, since demotedAt; "" when it is not demoted.
	demoted   string
	demotedAt time.Time
}

// trustKey is the record of a worker as the operator configured it: the name it asks for (-name or
// its host name), the host it reports and the network address it joins from ("" with an external
// NATS server). A restart of the same machine with the same flags has the same key.
func trustKey(asked, host, addr string) string {
	return strings.ToLower(asked) + "\x00" + host + "\x00" + addr
}

// ratesPrint fingerprints a worker's reported rates.
func ratesPrint(rates any) string {
	b, _ := json.Marshal(rates)
	sum := sha256.Sum256(b)
	return string(sum[:])
}

// trustOf is the record for key, made (and the oldest unused one forgotten past maxTrusts) when
// there is none; rates are the rates the worker reports now: other rates than the record's start
// its window anew (a demotion stays). c.mu is held.
func (c *Cluster) trustOf(key string, rates any) *trust {
	b := &c.prices
	if b.trusts == nil {
		b.trusts = map[string]*trust{}
	}
	t := b.trusts[key]
	if t == nil {
		c.forgetTrust()
		t = &trust{}
		b.trusts[key] = t
	}
	t.rate(rates)
	return t
}

// rate notes the rates a worker reports now: other rates than t's start its window anew (a
// demotion stays).
func (t *trust) rate(rates any) {
	if print := ratesPrint(rates); print != t.rates {
		t.rates, t.ratios = print, nil
	}
}

// bindTrust gives the new worker w its record: the one kept under w.trustKey, and its counts kept
// from its last time here (resumeTally), unless another live worker holds that key already (two
// workers reporting the same name and host, from one address or through an external NATS server,
// neither a restart of the other: restartOf). Then w gets a record of its own, unproven and kept
// under no key (w.trustKey ""), and no counts: its runs neither demote the other nor heal it, and
// when it leaves, nothing of it is kept. c.mu is held.
func (c *Cluster) bindTrust(w *worker) {
	for _, o := range c.workers {
		if o != w && !o.local && o.trustKey == w.trustKey {
			w.trustKey, w.trust = "", &trust{}
			w.trust.rate(w.rates)
			return
		}
	}
	w.trust = c.trustOf(w.trustKey, w.rates)
	c.resumeTally(w)
}

// rated notes the rates w reports again (after a server start, or new ones) on its record; c.mu is
// held.
func (c *Cluster) rated(w *worker) {
	if w.trustKey == "" {
		w.trust.rate(w.rates)
		return
	}
	w.trust = c.trustOf(w.trustKey, w.rates)
}

// forgetTrust makes room for one more record past maxTrusts: it forgets one of a worker not
// connected, one not demoted first. c.mu is held.
func (c *Cluster) forgetTrust() {
	trusts := c.prices.trusts
	if len(trusts) < maxTrusts {
		return
	}
	used := map[*trust]bool{}
	for _, w := range c.workers {
		used[w.trust] = true
	}
	victim := ""
	for k, t := range trusts {
		if used[t] {
			continue
		}
		if victim == "" || trusts[victim].demoted != "" && t.demoted == "" {
			victim = k
		}
	}
	delete(trusts, victim)
}

// median is the median of xs, the lower of the two middle ones for an even count (the benefit of
// the doubt to the machine); 0 for none.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[(len(s)-1)/2]
}

// ratio is how a measuring run that took took keeps to its price: the time beyond overrunSlack per
// second of the price, capped at maxRatio.
func ratio(took, price time.Duration) float64 {
	over := max(took-overrunSlack, 0)
	if over == 0 {
		return 0
	}
	if price <= 0 {
		return maxRatio
	}
	return min(float64(over)/float64(price), maxRatio)
}

// state names t's standing: "unproven", "on price", "slower than priced" or "demoted".
func (t *trust) state() string {
	m := median(t.ratios)
	switch {
	case t.demoted != "":
		return "demoted"
	case len(t.ratios) == 0:
		return "unproven"
	case m > overrunFactor:
		return "slower than priced"
	}
	return "on price"
}

// trusted reports whether w's prices place runs and price learners' estimates: this server's own
// machine's always, a worker's when it is on price.
func (w *worker) trusted() bool { return w.local || w.trust != nil && w.trust.state() == "on price" }

// record holds one measuring run's ratio r against t, and says what changed for the operator ("" for
// nothing): a demotion, with its reason, or its end; now is when.
func (t *trust) record(r float64, now time.Time) (changed string) {
	t.ratios = append(t.ratios, r)
	if len(t.ratios) > trustWindow {
		t.ratios = t.ratios[len(t.ratios)-trustWindow:]
	}
	if r <= overrunFactor {
		t.onPrice++
	} else {
		t.onPrice = 0
	}
	m := median(t.ratios)
	switch {
	case t.demoted == "" && len(t.ratios) >= minDemoteRuns && m > maxLoadRatio:
		t.demoted, t.demotedAt = fmt.Sprintf("its last %d measuring runs took a median %s times what the rates it reported priced them at (a loaded machine's take up to %d times): it reports itself faster than it runs",
			len(t.ratios), times(m), maxLoadRatio), now
		return "demoted: " + t.demoted
	case t.demoted != "" && t.onPrice >= healRuns:
		t.demoted, t.demotedAt = "", time.Time{}
		t.ratios = slices.Clone(t.ratios[len(t.ratios)-healRuns:]) // the runs before say nothing of it now
		return fmt.Sprintf("no longer demoted: %d measuring runs in a row ran on price", healRuns)
	}
	return ""
}

// times formats a ratio for the operator: whole from 10 on (12345), else with one decimal (2.4).
func times(x float64) string {
	if x < 10 {
		return strconv.FormatFloat(x, 'f', 1, 64)
	}
	return strconv.FormatFloat(x, 'f', 0, 64)
}
