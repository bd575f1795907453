// webgpu-regblock: each 16×16 workgroup computes a 64×64 tile of C, each invocation a 4×4 block of
// it held in registers. For each step of 16 along k the workgroup copies a 64×16 tile of A and a
// 16×64 tile of B into workgroup memory, each invocation loading one vec4 of each (the runner pads
// the rows of A and B with zeros to ld, a multiple of 4, so every vec4 is aligned); then every value
// read from workgroup memory is used 4 times from registers.
@group(0) @binding(0) var<storage, read> a: array<vec4<T>>;
@group(0) @binding(1) var<storage, read> b: array<vec4<T>>;
@group(0) @binding(2) var<storage, read_write> c: array<f32>;
@group(0) @binding(3) var<uniform> dims: vec4<u32>;

const BM = 64u;
const BK = 16u;
var<workgroup> sa: array<array<f32, 64>, 16>; // [k][row of the tile]: A's tile, transposed
var<workgroup> sb: array<array<f32, 64>, 16>; // [k][column of the tile]

@compute @workgroup_size(16, 16)
fn main(@builtin(local_invocation_id) l: vec3<u32>, @builtin(workgroup_id) w: vec3<u32>) {
  let n = dims.x;
  let ld = dims.y;
  let tid = l.y * 16u + l.x;
  let row0 = w.y * BM;
  let col0 = w.x * BM;
  var acc: array<vec4<f32>, 4>;
  let steps = (n + BK - 1u) / BK;
  for (var t = 0u; t < steps; t++) {
    // A: 64 rows × 16 columns = 256 vec4, one per invocation.
    let ar = tid / 4u;
    let ak = t * BK + (tid % 4u) * 4u;
    var va = vec4<f32>(0.0);
    if (row0 + ar < n && ak < ld) {
      va = vec4<f32>(a[((row0 + ar) * ld + ak) / 4u]);
    }
    let ac = (tid % 4u) * 4u;
    sa[ac][ar] = va.x;
    sa[ac + 1u][ar] = va.y;
    sa[ac + 2u][ar] = va.z;
    sa[ac + 3u][ar] = va.w;
    // B: 16 rows × 64 columns = 256 vec4, one per invocation.
    let bk = tid / 16u;
    let bc = (tid % 16u) * 4u;
    var vb = vec4<f32>(0.0);
    if (t * BK + bk < n && col0 + bc < ld) {
      vb = vec4<f32>(b[((t * BK + bk) * ld + col0 + bc) / 4u]);
    }
    sb[bk][bc] = vb.x;
    sb[bk][bc + 1u] = vb.y;
    sb[bk][bc + 2u] = vb.z;
    sb[bk][bc + 3u] = vb.w;
    workgroupBarrier();
    for (var k = 0u; k < BK; k++) {
      let av = vec4<f32>(sa[k][l.y * 4u], sa[k][l.y * 4u + 1u], sa[k][l.y * 4u + 2u], sa[k][l.y * 4u + 3u]);
      let bv = vec4<f32>(sb[k][l.x * 4u], sb[k][l.x * 4u + 1u], sb[k][l.x * 4u + 2u], sb[k][l.x * 4u + 3u]);
      acc[0] += av.x * bv;
      acc[1] += av.y * bv;
      acc[2] += av.z * bv;
      acc[3] += av.w * bv;
    }
    workgroupBarrier();
  }
  for (var i = 0u; i < 4u; i++) {
    let r = row0 + l.y * 4u + i;
    if (r < n) {
      for (var j = 0u; j < 4u; j++) {
        let cc = col0 + l.x * 4u + j;
        if (cc < n) {
          c[r * n + cc] = acc[i][j];
        }
      }
    }
  }
}
