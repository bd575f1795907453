package cells

import (
	"context"
	"encoding/json"
	"time"
)

// Pacing of a run's events (Paced).
const (
	// ProgressEvery throttles progress; a run's last progress (done = total) always goes out.
	ProgressEvery = 50 * time.Millisecond
	// ChartEvery throttles chart drawing; the last chart offered is drawn by Flush.
	ChartEvery = 250 * time.Millisecond
	// FramesPerBatch batches animation frames, so that a run sends tens of messages, not hundreds.
	FramesPerBatch = 20
)

// Paced is the Emitter a run reports to: it paces the run's events into Out, an Emitter that sends
// each event it gets at once (the server's messages to a page, a worker's NATS events). Progress
// goes out at most every ProgressEvery (the last always), a chart is drawn at most every ChartEvery
// (Out.Chart gets it drawn: its func returns the SVG), frames go in batches of FramesPerBatch, and
// events keep their order. Call Flush when the run ends. One goroutine at a time calls it.
type Paced struct {
	Out Emitter
	// Now is the throttles' clock; nil is time.Now.
	Now func() time.Time
	// Slack (0 to 1) is the fraction of ProgressEvery and ChartEvery by which the throttles let an
	// event out sooner: a relay re-pacing a stream paced where it ran (whose events arrive with the
	// network's jitter) passes it unchanged. 0 paces at the full intervals.
	Slack float64

	lastProg, lastChart time.Time
	frames              []any
	chart               func() (string, error) // offered, not yet drawn
}

func (p *Paced) now() time.Time {
	if p.Now != nil {
		return p.Now()
	}
	return time.Now()
}

// every is the throttle interval d less its Slack.
func (p *Paced) every(d time.Duration) time.Duration {
	return d - time.Duration(float64(d)*min(max(p.Slack, 0), 1))
}

func (p *Paced) Progress(done, total int) {
	if done < total && p.now().Sub(p.lastProg) < p.every(ProgressEvery) {
		return
	}
	p.lastProg = p.now()
	p.flushFrames()
	p.Out.Progress(done, total)
}

// Emit paces ev as its shorthand does (progress, chart, frames); any other event goes out in order.
func (p *Paced) Emit(ev Event) {
	switch ev.Type {
	case TypeProgress:
		if ev.Progress != nil {
			p.Progress(ev.Done, ev.Total)
			return
		}
	case TypeChart:
		svg := ev.SVG
		p.Chart(func() (string, error) { return svg, nil })
		return
	case TypeFrames:
		p.Frames(ev.Frames...)
		return
	}
	p.flushFrames()
	p.Out.Emit(ev)
}

func (p *Paced) Note(level, text string) { p.flushFrames(); p.Out.Note(level, text) }
func (p *Paced) Table(t Table)           { p.flushFrames(); p.Out.Table(t) }
func (p *Paced) Row(r Row)               { p.flushFrames(); p.Out.Row(r) }
func (p *Paced) Text(title, body string) { p.flushFrames(); p.Out.Text(title, body) }

func (p *Paced) Frames(frames ...any) {
	for _, f := range frames {
		p.frames = append(p.frames, f)
		if len(p.frames) == FramesPerBatch {
			p.flushFrames()
		}
	}
}

func (p *Paced) flushFrames() {
	if len(p.frames) > 0 {
		fs := p.frames
		p.frames = nil
		p.Out.Frames(fs...)
	}
}

func (p *Paced) Chart(draw func() (string, error)) {
	p.chart = draw
	if p.now().Sub(p.lastChart) >= p.every(ChartEvery) {
		p.drawChart()
	}
}

func (p *Paced) drawChart() {
	if p.chart == nil {
		return
	}
	svg, err := p.chart()
	p.chart, p.lastChart = nil, p.now()
	if err == nil && svg != "" { // the tables still have the numbers; a chart that fails is not a run that fails, and "" is no chart
		p.flushFrames()
		p.Out.Chart(func() (string, error) { return svg, nil })
	}
}

// Flush sends what is batched: the frames, then the last chart offered.
func (p *Paced) Flush() {
	p.flushFrames()
	p.drawChart()
}

// Placed tells the run behind Out where it runs (Placer), in order with its other events.
func (p *Paced) Placed(name, summary string) {
	p.flushFrames()
	Placed(p.Out, name, summary)
}

// Ask hands task to the page behind Out (Asker), after sending what is batched, so that the page
// has the run's output so far when the task arrives.
func (p *Paced) Ask(ctx context.Context, task any) (json.RawMessage, error) {
	p.Flush()
	return Ask(ctx, p.Out, task)
}
