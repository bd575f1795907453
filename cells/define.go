package cells

// Def is what a cell kind states of its own, S being its parsed spec: the fence's name, the browser
// module, how a source is parsed and what runs the spec. Define turns it into a Kind, so that a
// kind's package holds its spec, its run and its render.js, and no Kind type of its own:
//
//	//go:embed render.js
//	var script string
//
//	// New returns the systolic kind for env.
//	func New(env cells.Env) cells.Kind {
//		return cells.Define(cells.Def[Spec]{Name: "systolic", Script: script, Parse: Parse,
//			Run: func(s Spec, _ cells.Cell) cells.Run { return run{s, env.Rates} }})
//	}
type Def[S any] struct {
	// Name is the fence's info string (Kind.Name), e.g. "matmul".
	Name string
	// Script is the kind's browser module (Kind.Script): its embedded render.js.
	Script string
	// Language, if set, is the editor's highlighting (Languager): "yaml+cuda" or "yaml+wgsl".
	Language string
	// Parse validates a cell's source; its errors are *SpecError values whose Line is 1-based within
	// the source.
	Parse func(source string) (S, error)
	// Run is what runs a spec Parse accepted, for the cell c (whose Recording a kind may show).
	Run func(spec S, c Cell) Run
	// Actions are the kind's ways to run a cell besides Run (Actioner), such as Def.Action's.
	Actions []Action
}

// Define returns the Kind that d describes. Its Parse is d.Parse then d.Run; it is a Languager and
// an Actioner with d's Language and Actions (none when they are empty).
func Define[S any](d Def[S]) Kind { return defined[S]{d} }

// Action is an action (a button labelled label that sends a run named name) that parses a cell as
// d.Parse does and runs the spec with run.
func (d Def[S]) Action(name, label string, run func(spec S, c Cell) Run) Action {
	return Action{Name: name, Label: label, Parse: func(c Cell) (Run, error) { return parseWith(d.Parse, run, c) }}
}

// defined is the Kind a Def describes.
type defined[S any] struct{ d Def[S] }

func (k defined[S]) Name() string              { return k.d.Name }
func (k defined[S]) Script() string            { return k.d.Script }
func (k defined[S]) Language() string          { return k.d.Language }
func (k defined[S]) Actions() []Action         { return k.d.Actions }
func (k defined[S]) Parse(c Cell) (Run, error) { return parseWith(k.d.Parse, k.d.Run, c) }

// parseWith parses c's source with parse and returns run's Run of the spec, or parse's error.
func parseWith[S any](parse func(string) (S, error), run func(S, Cell) Run, c Cell) (Run, error) {
	s, err := parse(c.Source)
	if err != nil {
		return nil, err
	}
	return run(s, c), nil
}
