package cuda

import (
	"regexp"
	"strconv"
	"strings"

	"github.com/gpuplayground/playground/cells"
	"github.com/gpuplayground/playground/cells/shared/launch"
)

// Variant is one more launch a cell whose problem is not matmul runs beside its own kernel, so its
// chart compares what the experiment varies: another entry point of the same source (a kernel to
// set beside the learner's), block, grid, shared_bytes or registers per thread, each as the cell's where the
// variant does not say. Its rows and bar are named Label ("hist_global", "custom, block 32×8").
type Variant struct {
	Label string
	Spec  Spec
}

// MaxVariants bounds a cell's variants: each is one more emulation at every size.
const MaxVariants = 4

// variantSource is one item of the `variants:` list.
type variantSource struct {
	Kernel      cells.At[string]             `yaml:"kernel"`
	Block       cells.At[[]int]              `yaml:"block"`
	Grid        cells.At[[]cells.At[string]] `yaml:"grid"`
	Registers   cells.At[int]                `yaml:"registers"`
	SharedBytes cells.At[string]             `yaml:"shared_bytes"`
}

// setVariants reads `variants:` (after everything else): each item a copy of the cell's launch
// with the keys it gives changed, e.g.
//
//	variants: [{block: [32, 8]}, {kernel: hist_global, grid: ["ceil(n/256)"]}]
func (s *Spec) setVariants(list cells.At[[]cells.At[variantSource]]) error {
	if list.Line == 0 {
		return nil
	}
	if s.Problem.Name == "matmul" {
		return cells.Errorf(list.Line, "variants are for problems other than matmul; a matmul cell compares kernels with compare:")
	}
	if len(list.V) == 0 || len(list.V) > MaxVariants {
		return cells.Errorf(list.Line, "%d variants; give 1 to %d", len(list.V), MaxVariants)
	}
	for _, item := range list.V {
		v, y := *s, item.V
		v.Variants = nil
		var changed []string
		if y.Kernel.Line > 0 {
			if !identifier.MatchString(y.Kernel.V) || !regexp.MustCompile(`\b`+y.Kernel.V+`\s*\(`).MatchString(s.Source) {
				return cells.Errorf(y.Kernel.Line, "variant kernel %q is no function of the source below `---`", y.Kernel.V)
			}
			v.Kernel = y.Kernel.V
		}
		if y.Block.Line > 0 {
			if err := v.setBlock(y.Block.Line, y.Block.V); err != nil {
				return err
			}
			changed = append(changed, "block "+shape(v.Block))
		}
		if y.Grid.Line > 0 {
			g, err := launch.Parse("grid", y.Grid.Line, y.Grid.V)
			if err != nil {
				return err
			}
			v.Grid = g
			for _, n := range v.Sizes {
				if _, line, err := v.Grid.Eval(n, gridLimits); err != nil {
					return &cells.SpecError{Line: line, Msg: err.Error()}
				}
			}
		}
		if y.SharedBytes.Line > 0 {
			f, err := launch.ParseFormula(y.SharedBytes.V)
			if err != nil {
				return cells.Errorf(y.SharedBytes.Line, "shared_bytes formula %q: %v (write a formula in n, like 16*16*4 or n*4)", y.SharedBytes.V, err)
			}
			v.Shared, v.sharedLine = f, y.SharedBytes.Line
			for _, n := range v.Sizes {
				if _, err := v.SharedFor(n); err != nil {
					return &cells.SpecError{Line: v.sharedLine, Msg: err.Error()}
				}
			}
			changed = append(changed, "shared_bytes "+y.SharedBytes.V)
		}
		if y.Registers.Line > 0 {
			if v.Registers = y.Registers.V; v.Registers < 1 || v.Registers > MaxRegisters {
				return cells.Errorf(y.Registers.Line, "registers is %d; a thread may have 1 to %d", v.Registers, MaxRegisters)
			}
			changed = append(changed, strconv.Itoa(v.Registers)+" registers")
		}
		label := "custom"
		if v.Kernel != s.Kernel {
			label = v.Kernel
		}
		if len(changed) > 0 {
			label += ", " + strings.Join(changed, ", ")
		}
		if label == "custom" {
			return cells.Errorf(item.Line, "this variant changes nothing: give it a kernel, block, shared_bytes or registers of its own")
		}
		s.Variants = append(s.Variants, Variant{Label: label, Spec: v})
	}
	return nil
}

// CustomLabel is the chart's name for the cell's own kernel beside its variants: "custom" and what
// the variants change, as the cell has it ("custom, block 32×1", "custom (hist_shared)").
func (s Spec) CustomLabel() string {
	var parts []string
	for _, v := range s.Variants {
		if v.Spec.Kernel != s.Kernel && !slicesHas(parts, s.Kernel) {
			parts = append(parts, s.Kernel)
		}
		if v.Spec.Shared != s.Shared && !slicesHas(parts, "shared_bytes") {
			parts = append(parts, "shared_bytes "+s.sharedText())
		}
		if v.Spec.Block != s.Block && !slicesHas(parts, "block ") {
			parts = append(parts, "block "+shape(s.Block))
		}
		if v.Spec.Registers != s.Registers && !slicesHas(parts, "registers") {
			if s.Registers > 0 {
				parts = append(parts, strconv.Itoa(s.Registers)+" registers")
			} else {
				parts = append(parts, "registers as compiled")
			}
		}
	}
	if len(parts) == 0 {
		return "custom"
	}
	return "custom (" + strings.Join(parts, ", ") + ")"
}

// slicesHas reports whether some part holds sub.
func slicesHas(parts []string, sub string) bool {
	for _, p := range parts {
		if strings.Contains(p, sub) {
			return true
		}
	}
	return false
}

// shape writes a block as "32×8" (x×y, and ×z where z is not 1).
func shape(b [3]int) string {
	s := strconv.Itoa(b[0]) + "×" + strconv.Itoa(b[1])
	if b[2] > 1 {
		s += "×" + strconv.Itoa(b[2])
	}
	return s
}

// sharedText is the cell's shared_bytes formula as written ("0" without one).
func (s Spec) sharedText() string {
	if s.Shared == nil {
		return "0"
	}
	return s.Shared.String()
}
