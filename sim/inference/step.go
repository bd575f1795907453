// Package serving simulates serving a decoder-only transformer on one accelerator: requests arrive
// (a seeded Poisson process), a scheduler batches them (static batching, or iteration-level
// "continuous" batching as in Orca, Yu et al. OSDI 2022, and vLLM, Kwon et al. SOSP 2023), a pool
// holds their KV caches (a contiguous reservation per request, or paged blocks as in vLLM's
// PagedAttention), and each engine step takes the time a roofline of the chip gives it. Speculative
// decoding (Leviathan et al., ICML 2023) and weight and KV-cache formats of fewer bytes change what a
// step reads and how many tokens it yields. It reports throughput, latency percentiles (time to first
// token, time per output token) and memory use.
//
// Every time here is modelled, never measured: the step time is a lower bound, the chip's peak FLOP/s
// and memory bandwidth with nothing lost to kernels, launches or the host (the bound of the JAX
// scaling book's inference chapter, Austin et al. 2025). The KV pool counts tokens, not addresses:
// a contiguous reservation fits whenever enough tokens are free, so the external fragmentation that
// real contiguous allocators also suffer is not modelled, which favours them.
package inference

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/gpuplayground/playground/sim/transformer"
)

// Work is what one engine step asks of the chip.
type Work struct {
	// LinearFLOPs are the weight GEMMs' FLOPs, WeightBytes the weights they read (once per step,
	// whatever the batch).
	LinearFLOPs, WeightBytes float64
	// AttentionFLOPs are QKᵀ's and PV's FLOPs; KVBytes the KV cache read (the tokens already
	// cached) and written (the new tokens), fused attention moving nothing else.
	AttentionFLOPs, KVBytes float64
}

// StepTime is the modelled seconds of a step doing w on c: attention and the weight GEMMs as two
// rooflines one after the other,
//
//	max(AttentionFLOPs, KVBytes/BW·peak)/peak + max(LinearFLOPs/peak, WeightBytes/BW).
//
// In decode attention is bound by bandwidth, so this is the scaling book's "theoretical step time
// (general)": batch × KV bytes / bandwidth + max(2 × batch × parameters / FLOP/s, parameter bytes /
// bandwidth) (Austin et al. 2025, "All About Transformer Inference").
func StepTime(w Work, c Chip) float64 {
	attention := math.Max(w.AttentionFLOPs/c.FLOPs, w.KVBytes/c.Bandwidth)
	linear := math.Max(w.LinearFLOPs/c.FLOPs, w.WeightBytes/c.Bandwidth)
	return attention + linear
}

// Formats are the number formats a cell may name for weights or the KV cache, in bytes per number.
var Formats = map[string]float64{"fp32": 4, "bf16": 2, "fp16": 2, "fp8": 1, "int8": 1, "int4": 0.5}

// FormatBytes is the bytes per number of the format named (Formats), or an error naming the known.
func FormatBytes(name string) (float64, error) {
	if b, ok := Formats[strings.ToLower(name)]; ok {
		return b, nil
	}
	var names []string
	for n := range Formats {
		names = append(names, n)
	}
	sort.Strings(names)
	return 0, fmt.Errorf("unknown format %q; known: %s", name, strings.Join(names, ", "))
}

// Engine is a model served with weights of WeightBytes bytes per parameter and a KV cache of KVBytes
// bytes per number. The arithmetic stays 16-bit: quantised weights are read in fewer bytes and
// widened on chip (weight-only quantisation), so the peak is the chip's 16-bit one.
type Engine struct {
	Model                transformer.Model
	WeightBytes, KVBytes float64
}

// KVPerToken is the bytes of one token's keys and values, every layer.
func (e Engine) KVPerToken() float64 { return e.Model.KVBytesPerToken(e.KVBytes) }

// WeightMemory is the bytes the weights occupy: every parameter, the embedding table included.
func (e Engine) WeightMemory() float64 { return e.Model.Params() * e.WeightBytes }

// Seq is one sequence's part of a step: New tokens computed, attending to Past tokens already in its
// cache and, causally, to each other (a prefill has Past 0; a decode step New 1).
type Seq struct{ New, Past int }

// Work counts a step over seqs: 2 FLOPs per weight per new token (the output head included: every new
// token's logits, as package transformer counts them), the GEMM weights read once, 4 × layers × query
// width FLOPs per query–key pair, the past tokens' KV read and the new tokens' written.
func (e Engine) Work(seqs []Seq) Work {
	var w Work
	var tokens, keys, kv float64
	for _, s := range seqs {
		n, p := float64(s.New), float64(s.Past)
		tokens += n
		keys += n*p + n*(n+1)/2
		kv += p + n
	}
	if tokens == 0 {
		return w
	}
	gemm := e.Model.GEMMWeights()
	w.LinearFLOPs = 2 * gemm * tokens
	w.WeightBytes = gemm * e.WeightBytes
	w.AttentionFLOPs = 4 * float64(e.Model.Layers) * float64(e.Model.QWidth()) * keys
	w.KVBytes = kv * e.KVPerToken()
	return w
}

// ExpectedTokens is the mean number of tokens one verification step of speculative decoding yields
// when the draft proposes k tokens, each accepted with probability alpha independently until the
// first rejection, and the target adds one of its own: (1 − α^(k+1)) / (1 − α), k + 1 when α = 1
// (Leviathan, Kalman and Matias, "Fast Inference from Transformers via Speculative Decoding", ICML
// 2023, equation 1).
func ExpectedTokens(alpha float64, k int) float64 {
	if alpha >= 1 {
		return float64(k + 1)
	}
	return (1 - math.Pow(alpha, float64(k+1))) / (1 - alpha)
}

// Speedup is Leviathan et al.'s expected walltime improvement (their Theorem 3.8): the tokens per
// step over the step's cost, k draft steps of c target steps each plus one target step,
// (1 − α^(k+1)) / ((1 − α)(k·c + 1)).
func Speedup(alpha float64, k int, c float64) float64 {
	return ExpectedTokens(alpha, k) / (float64(k)*c + 1)
}
