package vgpu

// Warp-collective and atomic instructions.

type wmmaOp struct{}

func (d *decoder) decodeAtom(in *inst, m mods, s pinst) error {
	return d.errf("atomics are not supported yet")
}

func (d *decoder) decodeShfl(in *inst, m mods, s pinst) error {
	return d.errf("warp shuffles are not supported yet")
}

func (d *decoder) decodeVote(in *inst, m mods, s pinst) error {
	return d.errf("warp votes are not supported yet")
}

func (d *decoder) decodeWmma(in *inst, m mods, s pinst) error {
	return d.errf("WMMA is not supported yet")
}
