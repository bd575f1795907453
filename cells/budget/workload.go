package budget

import (
	"math"

	"github.com/gpuplayground/playground/sim/transformer"
)

// Workload is an amount of work: FLOPs, and what data-parallel training and memory add to it.
type Workload struct {
	// Name is the preset's name ("" for a typed-in workload); Label says what it is.
	Name, Label string
	FLOPs       float64
	// Bytes is memory that must be read at least once (the weights, for one token of inference): 0
	// when the workload is modelled as arithmetic only.
	Bytes float64
	// Steps is the number of optimiser steps, each ending with an all-reduce of GradientBytes; 0 for
	// a workload with no gradient to average (inference), which is not modelled on clusters.
	Steps         float64
	GradientBytes float64
	// How is the arithmetic behind FLOPs, Source where its inputs come from.
	How, Source string
	// Shape is the transformer a training preset trains (nil for the others): its clusters are
	// split into tensor, pipeline, context and data parallelism (package sim/parallel), each chip's
	// memory checked. Seq is its sequence length in tokens and Sequences its sequences per step.
	Shape     *transformer.Model
	Seq       int
	Sequences float64
	// Params and Tokens are the run's split of its compute, a model of Params parameters trained on
	// Tokens tokens, for the scaling-law table (0 when not known).
	Params, Tokens float64
}

// shape is the sim/transformer preset called name; it panics on a name that is not there (a
// programming error in Presets, caught by any test that loads the package).
func shape(name string) *transformer.Model {
	m, err := transformer.Lookup(name)
	if err != nil {
		panic(err)
	}
	return &m
}

// The presets' published inputs.
const (
	// ResNet50MACs is one forward pass of ResNet-50 on a 224×224 image: 3.8·10⁹ multiply-adds, which
	// He et al. call FLOPs (K. He et al., "Deep Residual Learning for Image Recognition", CVPR 2016,
	// Table 1 and §3.3).
	ResNet50MACs = 3.8e9
	// ImageNetImages is the ILSVRC-2012 training set (O. Russakovsky et al., "ImageNet Large Scale
	// Visual Recognition Challenge", IJCV 115, 2015, Table 2).
	ImageNetImages = 1_281_167
	// ResNet50Batch is He et al.'s mini-batch size (§3.4).
	ResNet50Batch = 256
	// ResNet50Params is ResNet-50's parameter count (torchvision, ResNet50_Weights.IMAGENET1K_V1).
	ResNet50Params = 25_557_032
	// GPT3FLOPs is GPT-3 175B's total training compute (T. Brown et al., "Language Models are Few-Shot
	// Learners", NeurIPS 2020, Table D.1: 3.14E+23 FLOPs, 3,640 petaflop/s-days).
	GPT3FLOPs = 3.14e23
	// GPT3Params, GPT3Tokens and GPT3BatchTokens are from Brown et al.: 175 billion parameters, 300
	// billion training tokens (§2.2), a batch of 3.2 million tokens (Table 2.1).
	GPT3Params      = 175e9
	GPT3Tokens      = 300e9
	GPT3BatchTokens = 3.2e6
	// TrainingFactor is a training step's FLOPs over a forward pass's: the backward pass costs about
	// twice the forward (J. Kaplan et al., "Scaling Laws for Neural Language Models", arXiv:2001.08361,
	// 2020, §2.1: C ≈ 6N per token for training against 2N for the forward pass).
	TrainingFactor = 3
	// GPT3Seq is GPT-3's context, the sequence length it was trained on (Brown et al. 2020, §2.1:
	// n_ctx = 2048 tokens).
	GPT3Seq = 2048
	// Llama3FLOPs and Llama3Tokens are Llama 3 405B's pre-training: 3.8·10²⁵ FLOPs on 15.6·10¹² tokens
	// (Grattafiori et al., "The Llama 3 Herd of Models", arXiv:2407.21783, 2024, §1 and §3.4).
	Llama3FLOPs  = 3.8e25
	Llama3Tokens = 15.6e12
	// Llama3Seq and Llama3BatchTokens are its sequence length and batch in the layouts of its Table
	// 4: 8,192 tokens, 16M tokens (2,048 sequences) per step. The batch grew from 4M to 16M tokens
	// during training (§3.4.1); the preset takes 16M throughout.
	Llama3Seq         = 8192
	Llama3BatchTokens = 2048 * Llama3Seq
)

// Presets are the workloads a cell can name.
var Presets = []Workload{
	{
		Name: "resnet50-epoch", Label: "one ResNet-50 training epoch on ImageNet",
		FLOPs: TrainingFactor * 2 * ResNet50MACs * ImageNetImages,
		Steps: math.Ceil(float64(ImageNetImages) / ResNet50Batch), GradientBytes: 4 * ResNet50Params,
		How:    "3 (forward + backward) × 2 FLOPs per multiply-add × 3.8 billion multiply-adds per image × 1,281,167 images; 5,005 steps of 256 images, each all-reducing 25.6 M FP32 gradients",
		Source: "He et al., CVPR 2016 (3.8 billion multiply-adds, batch 256); Russakovsky et al., IJCV 2015 (1,281,167 images); Kaplan et al. 2020 (training ≈ 3× forward); torchvision (25,557,032 parameters)",
	},
	{
		Name: "gpt3-training", Label: "GPT-3 175B's training run",
		FLOPs: GPT3FLOPs,
		Steps: GPT3Tokens / GPT3BatchTokens, GradientBytes: 2 * GPT3Params,
		How:    "3.14·10²³ FLOPs as published (6 × 175 billion parameters × 300 billion tokens = 3.15·10²³); 93,750 steps of 3.2 million tokens in sequences of 2,048, each all-reducing 175 billion 16-bit gradients",
		Source: "Brown et al., NeurIPS 2020 (Table D.1, Table 2.1, §2.1, §2.2); Kaplan et al. 2020 (6N FLOPs per training token)",
		Shape:  shape("gpt3-175b"), Seq: GPT3Seq, Sequences: GPT3BatchTokens / GPT3Seq,
		Params: GPT3Params, Tokens: GPT3Tokens,
	},
	{
		Name: "llama3-405b-training", Label: "Llama 3 405B's pre-training",
		FLOPs: Llama3FLOPs,
		Steps: math.Round(Llama3Tokens / Llama3BatchTokens), GradientBytes: 2 * 405e9,
		How:    "3.8·10²⁵ FLOPs as published; 15.6 trillion tokens in steps of 16 million tokens (2,048 sequences of 8,192), 929,832 steps",
		Source: "Grattafiori et al., \"The Llama 3 Herd of Models\", arXiv:2407.21783, 2024 (§1, §3.4, Table 4; the batch was smaller early in training, §3.4.1)",
		Shape:  shape("llama3-405b"), Seq: Llama3Seq, Sequences: Llama3BatchTokens / Llama3Seq,
		Params: 405e9, Tokens: Llama3Tokens,
	},
	{
		Name: "llm-token", Label: "one token of GPT-3 175B's inference",
		FLOPs: 2 * GPT3Params, Bytes: 2 * GPT3Params,
		How:    "2 FLOPs per parameter per token × 175 billion parameters; every one of the 175 billion 16-bit weights read once: 350 GB",
		Source: "Kaplan et al. 2020 (forward pass ≈ 2N FLOPs per token); Brown et al. 2020 (175 billion parameters)",
	},
}
