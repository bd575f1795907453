// webgpu-naive: C = A·B, row-major n×n, one invocation per entry of C. The runner puts
// `alias T = f32;` (or `enable f16; alias T = f16;`) above this file. Neighbouring invocations in x
// take neighbouring ROWS, so at each k their loads of A are n elements apart (uncoalesced), like the
// CUDA ladder's cuda-naive. dims = (n, ld, 0, 0), ld the row stride of A and B.
@group(0) @binding(0) var<storage, read> a: array<T>;
@group(0) @binding(1) var<storage, read> b: array<T>;
@group(0) @binding(2) var<storage, read_write> c: array<f32>;
@group(0) @binding(3) var<uniform> dims: vec4<u32>;

@compute @workgroup_size(16, 16)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
  let n = dims.x;
  let ld = dims.y;
  let row = id.x;
  let col = id.y;
  if (row >= n || col >= n) {
    return;
  }
  var acc = 0.0;
  for (var k = 0u; k < n; k++) {
    acc += f32(a[row * ld + k]) * f32(b[k * ld + col]);
  }
  c[row * n + col] = acc;
}
