// webgpu-coalesced: webgpu-naive with the roles swapped: neighbouring invocations in x take
// neighbouring COLUMNS, so at each k they read neighbouring elements of B and write neighbouring
// elements of C (coalesced), and all read the same element of A.
@group(0) @binding(0) var<storage, read> a: array<T>;
@group(0) @binding(1) var<storage, read> b: array<T>;
@group(0) @binding(2) var<storage, read_write> c: array<f32>;
@group(0) @binding(3) var<uniform> dims: vec4<u32>;

@compute @workgroup_size(16, 16)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
  let n = dims.x;
  let ld = dims.y;
  let row = id.y;
  let col = id.x;
  if (row >= n || col >= n) {
    return;
  }
  var acc = 0.0;
  for (var k = 0u; k < n; k++) {
    acc += f32(a[row * ld + k]) * f32(b[k * ld + col]);
  }
  c[row * n + col] = acc;
}
