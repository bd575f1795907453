// webgpu-tiled: each 16×16 workgroup computes a 16×16 tile of C. For each step along k it copies a
// 16×16 tile of A and one of B into workgroup memory (CUDA's shared memory), waits at a barrier,
// and sums from there: each element loaded from memory is used 16 times. Entries outside the n×n
// matrices load as zero, so any n works.
@group(0) @binding(0) var<storage, read> a: array<T>;
@group(0) @binding(1) var<storage, read> b: array<T>;
@group(0) @binding(2) var<storage, read_write> c: array<f32>;
@group(0) @binding(3) var<uniform> dims: vec4<u32>;

const TS = 16u;
var<workgroup> ta: array<array<f32, 16>, 16>;
var<workgroup> tb: array<array<f32, 16>, 16>;

@compute @workgroup_size(16, 16)
fn main(@builtin(local_invocation_id) l: vec3<u32>, @builtin(workgroup_id) w: vec3<u32>) {
  let n = dims.x;
  let ld = dims.y;
  let row = w.y * TS + l.y;
  let col = w.x * TS + l.x;
  var acc = 0.0;
  let steps = (n + TS - 1u) / TS;
  for (var t = 0u; t < steps; t++) {
    let ka = t * TS + l.x;
    let kb = t * TS + l.y;
    var va = 0.0;
    if (row < n && ka < n) {
      va = f32(a[row * ld + ka]);
    }
    var vb = 0.0;
    if (kb < n && col < n) {
      vb = f32(b[kb * ld + col]);
    }
    ta[l.y][l.x] = va;
    tb[l.y][l.x] = vb;
    workgroupBarrier();
    for (var k = 0u; k < TS; k++) {
      acc += ta[l.y][k] * tb[k][l.x];
    }
    workgroupBarrier();
  }
  if (row < n && col < n) {
    c[row * n + col] = acc;
  }
}
