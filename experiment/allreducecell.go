package experiment

import (
	"github.com/gpuplayground/playground/collective"
	"gopkg.in/yaml.v3"
)

// AllReduceSpec is a parsed `allreduce` cell, a cost model of the gradient all-reduce of
// data-parallel training:
//
//	gradient_mb: 1400                      # bytes to all-reduce per step, in MB (350M fp32 parameters)
//	gpus: [2, 4, 8, 16, 32, 64]
//	links: {NVLink 4: 450, PCIe 4 x16: 32} # GB/s per direction per GPU, in the order to show
//	latency_us: 5                          # per message
type AllReduceSpec struct {
	GradientMB float64
	GPUs       []int
	Links      []Link
	LatencyUS  float64
}

// Link is a named interconnect bandwidth in GB/s per direction.
type Link struct {
	Name string
	GBs  float64
}

// ParseAllReduce reads an `allreduce` cell. Errors are *SpecError values with line numbers.
func ParseAllReduce(src string) (AllReduceSpec, error) {
	s := AllReduceSpec{LatencyUS: 5}
	err := eachKey(src, "gradient_mb, gpus, links, latency_us", func(key, val *yaml.Node) error {
		var err error
		switch key.Value {
		case "gradient_mb":
			if err = decode(val, &s.GradientMB, "a number of MB"); err == nil && !(s.GradientMB > 0 && s.GradientMB <= 1e7) {
				err = errAt(val, "gradient_mb must be between 0 and 10,000,000")
			}
		case "gpus":
			if err = decode(val, &s.GPUs, "a list of GPU counts, like [2, 4, 8]"); err == nil {
				for j, p := range s.GPUs {
					if p < 1 || p > 65536 {
						err = errAt(val.Content[j], "%d GPUs: use 1 to 65536", p)
						break
					}
				}
			}
		case "links":
			if val.Kind != yaml.MappingNode || len(val.Content) == 0 {
				err = errAt(val, "links is a map of name: GB/s, like {NVLink 4: 450}")
				break
			}
			for j := 0; j+1 < len(val.Content); j += 2 {
				var gbs float64
				if err = decode(val.Content[j+1], &gbs, "GB/s"); err == nil && !(gbs > 0 && gbs <= 1e6) {
					err = errAt(val.Content[j+1], "link %q: GB/s must be positive", val.Content[j].Value)
				}
				if err != nil {
					break
				}
				s.Links = append(s.Links, Link{val.Content[j].Value, gbs})
			}
		case "latency_us":
			if err = decode(val, &s.LatencyUS, "microseconds"); err == nil && !(s.LatencyUS >= 0 && s.LatencyUS <= 1e6) {
				err = errAt(val, "latency_us must be between 0 and 1,000,000")
			}
		default:
			err = errAt(key, "unknown key %q; known keys: gradient_mb, gpus, links, latency_us", key.Value)
		}
		if err != nil {
			return err
		}
		return nil
	})
	if err != nil {
		return AllReduceSpec{}, err
	}
	if s.GradientMB == 0 || len(s.GPUs) == 0 || len(s.Links) == 0 {
		return AllReduceSpec{}, &SpecError{Line: 1, Msg: "an allreduce cell needs gradient_mb, gpus and links"}
	}
	return s, nil
}

// AllReducePoint is one modelled all-reduce (never measured). Its JSON form is the body of the
// websocket `allreduce` message.
type AllReducePoint struct {
	Link    string  `json:"link"`
	GPUs    int     `json:"gpus"`
	Seconds float64 `json:"seconds"`
	// BusGBs is NCCL's bus bandwidth for that time, GB/s.
	BusGBs float64 `json:"bus_gbs"`
}

// ModelAllReduce evaluates the ring all-reduce model for every link and GPU count.
func ModelAllReduce(s AllReduceSpec) []AllReducePoint {
	var out []AllReducePoint
	bytes := s.GradientMB * 1e6
	for _, l := range s.Links {
		for _, p := range s.GPUs {
			sec := collective.RingAllReduce(bytes, p, l.GBs*1e9, s.LatencyUS*1e-6)
			out = append(out, AllReducePoint{Link: l.Name, GPUs: p, Seconds: sec, BusGBs: collective.BusBandwidth(bytes, p, sec) / 1e9})
		}
	}
	return out
}
