package cells

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"github.com/gpuplayground/playground/experiment"
)

// Recording is a real run of one cell on a GPU machine (made by cmd/record), kept in
// lessons/recorded/<cell id>.json so that learners without a GPU see measured numbers, always
// labelled with where, when and how they were measured.
type Recording struct {
	Cell string `json:"cell"`
	// SourceSHA256 is the hash (SourceHash) of the cell source the recording was made from; the
	// lessons refuse a recording whose cell has changed since.
	SourceSHA256 string              `json:"source_sha256"`
	Device       string              `json:"device"`
	Driver       string              `json:"driver"`
	Date         string              `json:"date"`
	Command      string              `json:"command"`
	Results      []experiment.Result `json:"results"`
}

// Label is the provenance line shown with recorded numbers.
func (r Recording) Label() string {
	return fmt.Sprintf("recorded on %s (driver CUDA %s) at %s with `%s`, not measured now", r.Device, r.Driver, r.Date, r.Command)
}

// SourceHash is the hex SHA-256 of a cell's source, as recordings store it.
func SourceHash(source string) string {
	h := sha256.Sum256([]byte(source))
	return hex.EncodeToString(h[:])
}

// Common holds the keys every cell kind accepts; kinds embed it with `yaml:",inline"`.
type Common struct {
	// ID, if set, is the cell's stable id (recordings and links use it instead of its position).
	ID string `yaml:"id"`
}
