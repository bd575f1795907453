package cells

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"strings"

	"github.com/gpuplayground/playground/measure"
	"gopkg.in/yaml.v3"
)

// Recording is a real run of one cell on a GPU machine (made by cmd/record), kept in
// lessons/recorded/<cell id>.json so that learners without a GPU see measured numbers, always
// labelled with where, when and how they were measured.
type Recording struct {
	Cell string `json:"cell"`
	// SourceSHA256 is the hash (SourceHash) of the cell source the recording was made from; the
	// lessons refuse a recording whose cell has changed since.
	SourceSHA256 string           `json:"source_sha256"`
	Device       string           `json:"device"`
	Driver       string           `json:"driver"`
	Date         string           `json:"date"`
	Command      string           `json:"command"`
	Results      []measure.Result `json:"results"`
}

// Label is the provenance line shown with recorded numbers.
func (r Recording) Label() string {
	return fmt.Sprintf("recorded on %s (driver CUDA %s) at %s with `%s`, not measured now", r.Device, r.Driver, r.Date, r.Command)
}

// RecordedShower is a run that can show its cell's recording without running: the recorded rows a
// run here would show first. A server that refuses the run (estimated over the run time limit) shows
// them, so that the learner still sees the cell's measured numbers.
type RecordedShower interface {
	// ShowRecorded emits the recorded rows the run would show here; false when it has none.
	ShowRecorded(e Emitter) bool
}

// ShowRecorded emits r's recorded rows (RecordedShower), through the runs this package wraps; it
// reports whether r had any to show.
func ShowRecorded(r Run, e Emitter) bool {
	if m, ok := r.(onMachine); ok {
		r = m.inner
	}
	s, ok := r.(RecordedShower)
	return ok && s.ShowRecorded(e)
}

// SourceHash is the hex SHA-256 of a cell's source, as recordings store it, without its top-level
// `show:` key (its line, and the indented or list lines of a block value under it): which columns the
// page shows first changes nothing measured.
func SourceHash(source string) string {
	var kept []string
	inShow := false
	for _, line := range strings.SplitAfter(source, "\n") {
		if strings.HasPrefix(line, "show:") {
			inShow = true
			continue
		}
		if inShow && (strings.HasPrefix(line, " ") || strings.HasPrefix(line, "\t") || strings.HasPrefix(line, "-")) {
			continue
		}
		inShow = false
		kept = append(kept, line)
	}
	h := sha256.Sum256([]byte(strings.Join(kept, "")))
	return hex.EncodeToString(h[:])
}

// Common holds the keys every cell kind accepts; kinds embed it with `yaml:",inline"`.
type Common struct {
	// ID, if set, is the cell's stable id (recordings and links use it instead of its position):
	// 1 to 64 lower-case letters, digits and dashes, starting with a letter or digit.
	ID string `yaml:"id"`
	// Machine, if set, is the class of machine the learner asks the cell to run on (a worker's
	// -class, e.g. "h100"), same characters as an id; servers of one machine ignore it.
	Machine string `yaml:"machine"`
}

var validID = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,63}$`)

// CheckClass returns an error unless class can name a class of machine (a worker's -class, a cell's
// `machine:` key, the page's machine menu): 1 to 64 lower-case letters, digits and dashes, starting
// with a letter or digit, as an id.
func CheckClass(class string) error {
	if !validID.MatchString(class) {
		return fmt.Errorf("class %q: use 1 to 64 lower-case letters, digits and dashes, starting with a letter or digit", class)
	}
	return nil
}

// ExplicitID returns the `id:` key of a cell's source ("" when it has none), read from its YAML (the
// header before a `---` line, for kinds that have one). A source whose YAML does not parse has no id
// here; its kind reports the YAML error. An id that is not 1 to 64 lower-case letters, digits and
// dashes is an error.
func ExplicitID(source string) (string, error) {
	c := common(source)
	if c.ID == "" {
		return "", nil
	}
	if !validID.MatchString(c.ID) {
		return "", fmt.Errorf("id %q: use 1 to 64 lower-case letters, digits and dashes, starting with a letter or digit", c.ID)
	}
	return c.ID, nil
}

// common reads the keys every kind has from a cell's YAML (the header before a `---` line, for kinds
// that have one); a source whose YAML does not parse has none.
func common(source string) Common {
	var header strings.Builder
	for _, line := range strings.SplitAfter(source, "\n") {
		if strings.TrimSpace(line) == "---" {
			break
		}
		header.WriteString(line)
	}
	var c Common
	if yaml.Unmarshal([]byte(header.String()), &c) != nil {
		return Common{}
	}
	return c
}
