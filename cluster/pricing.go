package cluster

import (
	"github.com/gpuplayground/playground/machine"
	"reflect"
	"time"

	"github.com/gpuplayground/playground/cells"
)

// pricer is one machine as Estimate prices a run on it: what pricing needs, copied under c.mu, so
// that the parse itself (price) runs outside it.
type pricer struct {
	w *worker
	// kinds are the server's kinds with the worker's reported rates (nil for this server's own
	// machine, which prices a run with its own rates: r.Estimate()), and gen the worker's ratesGen
	// they were built from.
	kinds []cells.Kind
	gen   uint64
	// measured: the rates were measured on that machine (reported by the worker, or calibrated
	// here), not estimate.Defaults; only such prices place runs (pick).
	measured bool
	// fallback, for a worker whose prices are not trusted (worker.trusted), are the server's kinds
	// pricing with estimate.Defaults: a learner's estimate on it is never shorter than theirs.
	fallback []cells.Kind
}

// pricerOf is w as Estimate prices a run on it, building the kinds with its rates when first
// needed (Config.Machine.KindsWithRates; none without Config.Machine, and then it cannot be
// priced). c.mu is held.
func (c *Cluster) pricerOf(w *worker) pricer {
	if w.local {
		// r.Estimate() uses the server's machine's rates: Serve gives the cluster the same machine.
		return pricer{w: w, measured: c.cfg.Machine != nil && c.cfg.Machine.Env.Rates.Calibrated()}
	}
	if w.kinds == nil && c.cfg.Machine != nil {
		w.kinds = c.cfg.Machine.KindsWithRates(w.rates)
	}
	p := pricer{w: w, kinds: w.kinds, gen: w.ratesGen, measured: w.rates != nil}
	if p.measured && !w.trusted() {
		p.fallback = c.defaultKinds()
	}
	return p
}

// defaultKinds are the server's kinds pricing with estimate.Defaults, built when first needed (nil
// without Config.Machine). c.mu is held.
func (c *Cluster) defaultKinds() []cells.Kind {
	if c.prices.defaults == nil && c.cfg.Machine != nil {
		c.prices.defaults = c.cfg.Machine.KindsWithRates(nil)
	}
	return c.prices.defaults
}

// estimate is how long r, parsed from j, is expected to take on p's machine for a learner (and for
// the run time limit): its price, and for a worker whose prices are not trusted at least its price
// with estimate.Defaults, so that rates no run has borne out never make an estimate shorter (a
// worker's claim to be slow still counts). ok is false when it cannot be priced there. c.mu is not
// held.
func (p pricer) estimate(j machine.Job, r cells.Run, d time.Duration) (time.Duration, bool) {
	if p.fallback == nil {
		return d, true
	}
	def, ok := pricer{w: p.w, kinds: p.fallback}.price(j, r)
	return max(d, def), ok
}

// price is how long r, parsed from j, is expected to take on p's machine: this server's own prices
// r with its own rates, a worker by parsing j again with kinds using its rates. ok is false when it
// cannot be priced there (no kinds, no such kind among them, or j does not parse with them). c.mu
// is not held: parsing takes time.
func (p pricer) price(j machine.Job, r cells.Run) (d time.Duration, ok bool) {
	if p.w.local {
		return r.Estimate(), true
	}
	k, found := cells.Lookup(p.kinds, j.Kind)
	if !found {
		return 0, false
	}
	run, err := cells.Parse(k, j.Action, j.Cell)
	if err != nil {
		return 0, false
	}
	// a worker's rates are checked (cleanRates), but an estimate from them may still overflow a
	// Duration, which wraps negative: no such price, or it would be the fastest
	if d = run.Estimate(); d < 0 {
		return 0, false
	}
	return d, true
}

// price is a run's estimate on one worker, with the ratesGen of the rates it was priced with;
// claimed: with rates measured there (the worker's report, or this server's calibration), not
// estimate.Defaults. Only claimed prices place runs (soonest) and are held against the runs
// (checkPrice).
type price struct {
	d       time.Duration
	gen     uint64
	claimed bool
}

// maxPricedRuns bounds the runs whose prices the cluster keeps for placement (priceBook): the
// server keeps at most 1,000 waiting runs and prices each when it is parsed and again, as the same
// run, when it is queued; runs priced but never queued (refused, or shown shared results) take room
// too, so twice that.
const maxPricedRuns = 2048

// priceBook keeps, per run (keyed by the cells.Run value the server prices and then places, when
// it is comparable: a pointer, or a value of comparable fields), its estimate on each machine, as
// Estimate found them, for pick to place the run by and for the job to carry; the oldest run is forgotten
// past maxPricedRuns (then the run is placed as an unpriced one). Guarded by c.mu.
//
// It keeps too the trust in each configured worker's prices (trust.go: trustOf), and the server's
// kinds pricing with estimate.Defaults (defaultKinds).
type priceBook struct {
	runs  map[any]map[*worker]price
	order []any

	trusts   map[string]*trust
	defaults []cells.Kind
}

// runKey is r as a priceBook key; ok is false when r's value cannot be compared (a map key would
// panic), so its prices cannot be kept.
func runKey(r cells.Run) (key any, ok bool) {
	v := reflect.ValueOf(r)
	if !v.IsValid() || !v.Comparable() {
		return nil, false
	}
	return r, true
}

// keep records ps as r's prices, replacing any before. c.mu is held.
func (b *priceBook) keep(r cells.Run, ps map[*worker]price) {
	key, ok := runKey(r)
	if !ok {
		return
	}
	if b.runs == nil {
		b.runs = map[any]map[*worker]price{}
	}
	if _, had := b.runs[key]; !had {
		if len(b.order) >= maxPricedRuns {
			delete(b.runs, b.order[0])
			b.order = b.order[1:]
		}
		b.order = append(b.order, key)
	}
	b.runs[key] = ps
}

// of is r's prices per machine (nil when none are kept). c.mu is held.
func (b *priceBook) of(r cells.Run) map[*worker]price {
	key, ok := runKey(r)
	if !ok {
		return nil
	}
	return b.runs[key]
}

// soonest reports, among the free machines ws, whether every one has a price for the run in ps
// that is still current (priced with the rates the worker has now) from a machine whose prices its
// runs bear out (worker.trusted: not unproven, slower than priced nor demoted); only then does pick
// place a measuring run on the one expected to finish it soonest. c.mu is held.
func soonest(ps map[*worker]price, ws []*worker) bool {
	if len(ps) == 0 {
		return false
	}
	for _, w := range ws {
		if p, ok := ps[w]; !ok || !p.claimed || p.gen != w.ratesGen || !w.trusted() {
			return false
		}
	}
	return true
}

// priceOn is r's price on w as Estimate kept it (0: none, or priced with rates w has since
// replaced).
func (c *Cluster) priceOn(w *worker, r cells.Run) time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	if p, ok := c.prices.of(r)[w]; ok && p.gen == w.ratesGen {
		return p.d
	}
	return 0
}

// Estimate is how long r, parsed from j, is expected to take on the fastest machine connected now
// that can take it (machine.Estimator): this server's own with its own rates (r.Estimate()), a
// worker with the rates it reported (or estimate.Defaults, which it prices its runs with too, when
// it reported none), by parsing j again with kinds that use them (pricer.price). ok is false when
// no machine that can take r is connected, or none can be priced (no Config.Machine to build kinds
// with). The prices are kept for placing r (pick) and for its job (job.PriceNS), unless the best is
// over this server's run time limit: the server refuses such a run (and prices smaller versions of
// it to offer, machine.Fit), so keeping them would only push the prices of queued runs out.
func (c *Cluster) Estimate(j machine.Job, r cells.Run) (time.Duration, bool) {
	n := cells.NeedsOf(r)
	var ps []pricer
	c.mu.Lock()
	gpu := c.able(n, nil) // else a run that needs a GPU goes to any machine of its class (pick)
	for _, w := range c.workers {
		if (gpu && !w.m.Meets(n)) || (n.Machine != "" && w.m.Class != n.Machine) {
			continue
		}
		ps = append(ps, c.pricerOf(w))
	}
	c.mu.Unlock()
	best, ok := time.Duration(0), false
	kept := map[*worker]price{}
	for _, p := range ps {
		d, priced := p.price(j, r)
		if !priced {
			continue
		}
		kept[p.w] = price{d, p.gen, p.measured}
		if d, priced = p.estimate(j, r, d); priced && (!ok || d < best) {
			best, ok = d, true
		}
	}
	if ok && best > c.runLimit(machine.NoTimeLimit) {
		return best, ok // the server refuses it: its prices would only push queued runs' out of the book
	}
	c.mu.Lock()
	c.prices.keep(r, kept)
	c.mu.Unlock()
	return best, ok
}

// Bounds of a measuring run's time on a worker against its price there (checkPrice, trust.go): a
// run is on price when it takes at most overrunFactor times its price plus overrunSlack. Estimates
// are meant to be pessimistic (cells.Run.Estimate), so an honest machine's runs stay under their
// price; the factor leaves room for noise, and the slack for what no price counts (the worker
// parsing the job again, compiling a kernel, the events' trip here).
const (
	overrunFactor = 2
	overrunSlack  = time.Second
)

// checkPrice holds a measuring run r that took took on the worker w (from its taken event to its
// end, on this server's clock) against its price there, with the rates w claims (trust.record):
// the evidence that decides whether its prices place runs and price learners' estimates, and
// whether it is demoted, so that a worker cannot draw every measuring run to itself by claiming to
// be fast. The operator is told of a demotion and of its end.
func (c *Cluster) checkPrice(w *worker, r cells.Run, took time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p, ok := c.prices.of(r)[w]
	if w.trust == nil || !ok || !p.claimed || p.gen != w.ratesGen {
		return
	}
	if what := w.trust.record(ratio(took, p.d), time.Now()); what != "" {
		c.say("machine %s %s (its last measuring run took %s where its rates priced it at %s)",
			w.m.Name, what, took.Round(time.Millisecond), p.d.Round(time.Millisecond))
	}
}
