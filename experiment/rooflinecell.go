package experiment

import (
	"github.com/gpuplayground/playground/kernels"
	"github.com/gpuplayground/playground/kernels/simt"
	"gopkg.in/yaml.v3"
)

// RooflineSpec is a parsed `roofline` cell: a matmul spec whose results are placed on this machine's
// roofline, with the learner's predictions beside them:
//
//	kernels: [naive, gonum]
//	sizes: [256, 1024]
//	predict: {naive: 2, gonum: 20}   # your GFLOP/s guesses, written before you run
//	gpu: H100 SXM                    # optional: that GPU's datasheet roofline too
type RooflineSpec struct {
	Spec
	// Predict maps kernel names to predicted GFLOP/s.
	Predict map[string]float64
	// GPU, if set, is drawn from its datasheet (labelled so), not measured.
	GPU *simt.GPU
}

// ParseRoofline reads a `roofline` cell. Errors are *SpecError values with line numbers.
func ParseRoofline(src string, available []kernels.Kernel, lim Limits) (RooflineSpec, error) {
	var r RooflineSpec
	var predictNode *yaml.Node
	s, err := parse(src, available, lim, map[string]func(*yaml.Node) error{
		"predict": func(n *yaml.Node) error {
			predictNode = n
			return decode(n, &r.Predict, "kernel: GFLOP/s pairs, like {naive: 2, gonum: 20}")
		},
		"gpu": func(n *yaml.Node) error {
			var name string
			if err := decode(n, &name, "a GPU name"); err != nil {
				return err
			}
			g, err := simt.LookupGPU(name)
			if err != nil {
				return errAt(n, "%v", err)
			}
			r.GPU = &g
			return nil
		},
	})
	if err != nil {
		return RooflineSpec{}, err
	}
	r.Spec = s
	for name, g := range r.Predict {
		in := false
		for _, k := range s.Kernels {
			in = in || k == name
		}
		if !in || !(g > 0) {
			return RooflineSpec{}, errAt(predictNode, "predict %s: %g: predictions are positive GFLOP/s for kernels the cell runs", name, g)
		}
	}
	return r, nil
}
