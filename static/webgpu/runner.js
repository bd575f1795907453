// WebGPU runner: runs the tasks of the webgpu package (cells/shared/webgpu/task.go, docs/protocol.md) on
// the learner's own GPU, through WebGPU (https://www.w3.org/TR/webgpu/), and answers with raw
// timings and the relative error against a float64 reference computed here. Used by the browser
// modules of the matmul and wgsl cell kinds. Plain ES module, no dependencies.
//
//   runTask(task, signal) -> Promise<answer>
//
// task: {op: "adapter"} (say what the adapter is; nothing runs)
//    or {op: "matmul", n, repeats, budget_s, transfers, kernels: [{name, f16, source?, entry?, workgroup?, dispatch, ld?}]}
//    or {op: "compile", kernels: [{name: "custom", source, entry, workgroup}]}
// answer: {unavailable, detail} when WebGPU cannot run here, else
//         {adapter: {vendor, architecture, device, description, fallback, f16, timestamps},
//          compile: [{type, line, col, message}], results: [{kernel, n, error | method, batch,
//          seconds: [...], upload_seconds, readback_seconds, rel_error, checked}]}
//
// Bounded work: a kernel's warm-up dispatch is timed; a second one (the first also pays for the
// pipeline's first use) only when the first was short against the budget. Each timed repeat is a
// batch of dispatches lasting about BATCH_SECONDS, and the repeats stop at the task's budget_s
// (fewer than asked, never fewer than one): `seconds` then holds fewer entries than `repeats`.

const SAMPLED = 1024; // entries of C checked above n = 512
const FULL_CHECK_MAX = 512;
const BATCH_SECONDS = 0.02; // each timed sample lasts about this long (by the warm-up's wall clock)
const MAX_BATCH = 256;
const DEFAULT_BUDGET = 1; // seconds of timed repeats per kernel when the task names none

let devicePromise = null;

// device opens the adapter and device once per page (again after a device loss).
function device() {
  if (!devicePromise) devicePromise = openDevice().then((d) => {
    if (d.device) d.device.lost.then(() => { devicePromise = null; });
    return d;
  });
  return devicePromise;
}

async function openDevice() {
  if (!globalThis.isSecureContext) return { unavailable: "insecure-context", detail: `this page's origin is ${location.origin}` };
  if (!navigator.gpu) return { unavailable: "no-navigator-gpu" };
  let adapter;
  try {
    adapter = await navigator.gpu.requestAdapter({ powerPreference: "high-performance" });
  } catch (err) {
    return { unavailable: "no-adapter", detail: String(err && err.message || err) };
  }
  if (!adapter) return { unavailable: "no-adapter" };
  const features = [];
  const f16 = adapter.features.has("shader-f16");
  const timestamps = adapter.features.has("timestamp-query");
  if (f16) features.push("shader-f16");
  if (timestamps) features.push("timestamp-query");
  let dev;
  try {
    dev = await adapter.requestDevice({ requiredFeatures: features });
  } catch (err) {
    return { unavailable: "no-device", detail: String(err && err.message || err) };
  }
  const info = adapter.info || {};
  const fallback = Boolean(info.isFallbackAdapter ?? adapter.isFallbackAdapter ?? false);
  return {
    device: dev,
    adapter: {
      vendor: String(info.vendor || ""), architecture: String(info.architecture || ""),
      device: String(info.device || ""), description: String(info.description || ""),
      fallback, f16, timestamps,
    },
  };
}

const ladderSources = new Map();
async function ladderSource(name) {
  const base = name.replace(/^webgpu-/, "").replace(/-f16$/, "");
  if (!ladderSources.has(base)) {
    ladderSources.set(base, fetch(`/static/webgpu/${base}.wgsl`).then((r) => {
      if (!r.ok) throw new Error(`fetching ${base}.wgsl: HTTP ${r.status}`);
      return r.text();
    }));
  }
  return ladderSources.get(base);
}

// prelude defines T, the element type of A and B, for the ladder's kernels.
function prelude(f16) {
  return f16 ? "enable f16;\nalias T = f16;\n" : "alias T = f32;\n";
}

export async function runTask(task, signal) {
  const d = await device();
  if (d.unavailable) return { unavailable: d.unavailable, detail: d.detail || "" };
  if (task.op === "adapter") return { adapter: d.adapter };
  if (task.op === "compile") return { adapter: d.adapter, compile: await compile(d.device, task.kernels[0]) };
  const results = [];
  const inputs = makeInputs(task.n);
  for (const k of task.kernels) {
    if (signal && signal.aborted) throw new Error("stopped");
    try {
      results.push(await timeKernel(d, k, task, inputs, signal));
    } catch (err) {
      results.push({ kernel: k.name, n: task.n, error: String(err && err.message || err), rel_error: null });
    }
  }
  return { adapter: d.adapter, results };
}

// compile compiles a learner's WGSL and reports getCompilationInfo()'s messages, and, when it has no
// error, whether a compute pipeline can be made from its entry point.
async function compile(dev, k) {
  const module = dev.createShaderModule({ code: k.source });
  const info = await module.getCompilationInfo();
  const msgs = info.messages.map((m) => ({ type: m.type, line: m.lineNum || 0, col: m.linePos || 0, message: m.message }));
  if (!msgs.some((m) => m.type === "error")) {
    try {
      await pipeline(dev, module, k);
    } catch (err) {
      msgs.push({ type: "error", line: 0, col: 0, message: String(err && err.message || err) });
    }
  }
  return msgs.slice(0, 64);
}

function layout(dev) {
  const bgl = dev.createBindGroupLayout({ entries: [
    { binding: 0, visibility: GPUShaderStage.COMPUTE, buffer: { type: "read-only-storage" } },
    { binding: 1, visibility: GPUShaderStage.COMPUTE, buffer: { type: "read-only-storage" } },
    { binding: 2, visibility: GPUShaderStage.COMPUTE, buffer: { type: "storage" } },
    { binding: 3, visibility: GPUShaderStage.COMPUTE, buffer: { type: "uniform" } },
  ] });
  return { bgl, pl: dev.createPipelineLayout({ bindGroupLayouts: [bgl] }) };
}

// pipeline makes the compute pipeline; a learner's kernel gets its workgroup size as the override
// constants wg_x, wg_y, wg_z where its WGSL declares them.
async function pipeline(dev, module, k) {
  const { bgl, pl } = layout(dev);
  const constants = {};
  if (k.workgroup) {
    ["wg_x", "wg_y", "wg_z"].forEach((name, i) => {
      if (new RegExp(`\\boverride\\s+${name}\\b`).test(k.source)) constants[name] = k.workgroup[i];
    });
  }
  const p = await dev.createComputePipelineAsync({ layout: pl, compute: { module, entryPoint: k.entry || "main", constants } });
  return { p, bgl };
}

// makeInputs draws A and B in [-1, 1), never zero, as float32 (what the kernels read; f16 kernels
// read them rounded to f16, and are checked against this same float64 reference).
function makeInputs(n) {
  const draw = () => {
    const m = new Float32Array(n * n);
    for (let i = 0; i < m.length; i++) {
      let v = 0;
      while (v === 0) v = Math.fround(Math.random() * 2 - 1);
      m[i] = v;
    }
    return m;
  };
  return { a: draw(), b: draw(), ref: null, samples: null };
}

// reference is C = A·B in float64: every entry for n ≤ 512, else SAMPLED entries drawn at random.
function reference(inputs, n) {
  if (inputs.ref) return inputs.ref;
  const { a, b } = inputs;
  if (n <= FULL_CHECK_MAX) {
    const c = new Float64Array(n * n);
    for (let i = 0; i < n; i++) {
      for (let k = 0; k < n; k++) {
        const aik = a[i * n + k];
        const row = i * n;
        const brow = k * n;
        for (let j = 0; j < n; j++) c[row + j] += aik * b[brow + j];
      }
    }
    inputs.ref = { idx: null, want: c };
  } else {
    const idx = new Uint32Array(SAMPLED);
    const want = new Float64Array(SAMPLED);
    for (let s = 0; s < SAMPLED; s++) {
      const i = Math.floor(Math.random() * n);
      const j = Math.floor(Math.random() * n);
      let sum = 0;
      for (let k = 0; k < n; k++) sum += a[i * n + k] * b[k * n + j];
      idx[s] = i * n + j;
      want[s] = sum;
    }
    inputs.ref = { idx, want };
  }
  return inputs.ref;
}

// relError is ‖C − C_ref‖_F / ‖C_ref‖_F over the checked entries; null when C holds NaN or Inf.
function relError(c, ref) {
  let num = 0;
  let den = 0;
  const count = ref.idx ? ref.idx.length : ref.want.length;
  for (let s = 0; s < count; s++) {
    const got = c[ref.idx ? ref.idx[s] : s];
    if (!Number.isFinite(got)) return { rel: null, checked: count };
    const d = got - ref.want[s];
    num += d * d;
    den += ref.want[s] * ref.want[s];
  }
  if (den === 0) return { rel: num === 0 ? 0 : null, checked: count };
  return { rel: Math.sqrt(num / den), checked: count };
}

// f16Bits rounds a float32 to the nearest f16 (ties to even) and returns its bits.
const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);
function f16Bits(x) {
  f32[0] = x;
  const bits = u32[0];
  const sign = (bits >>> 16) & 0x8000;
  const exp = (bits >>> 23) & 0xff;
  let mant = bits & 0x7fffff;
  if (exp === 0xff) return sign | 0x7c00 | (mant ? 0x200 : 0);
  let e = exp - 127 + 15;
  if (e >= 0x1f) return sign | 0x7c00;
  if (e <= 0) { // subnormal or zero
    if (e < -10) return sign;
    mant |= 0x800000;
    const shift = 14 - e;
    let h = mant >>> shift;
    const rem = mant & ((1 << shift) - 1);
    const half = 1 << (shift - 1);
    if (rem > half || (rem === half && (h & 1))) h++;
    return sign | h;
  }
  let h = (e << 10) | (mant >>> 13);
  const rem = mant & 0x1fff;
  if (rem > 0x1000 || (rem === 0x1000 && (h & 1))) h++;
  return sign | h;
}

// pack lays an n×n float32 matrix out with row stride ld (zeros beyond n) as f32 or f16 bytes,
// padded to a multiple of 4 bytes.
function pack(m, n, ld, f16) {
  const count = Math.max(n * ld, 2);
  if (f16) {
    const out = new Uint16Array(count + (count % 2));
    for (let i = 0; i < n; i++) for (let j = 0; j < n; j++) out[i * ld + j] = f16Bits(m[i * n + j]);
    return out;
  }
  if (ld === n) return m;
  const out = new Float32Array(count);
  for (let i = 0; i < n; i++) out.set(m.subarray(i * n, i * n + n), i * ld);
  return out;
}

const now = () => performance.now() / 1000;

async function timeKernel(d, k, task, inputs, signal) {
  const dev = d.device;
  const n = task.n;
  if (k.f16 && !d.adapter.f16) throw new Error("not run: this adapter lacks the shader-f16 feature that the f16 kernels need");
  const custom = Boolean(k.source);
  const ld = k.ld || n; // the server sends a ladder kernel's row length and dispatch (cells/shared/webgpu.Ladder)
  let code = k.source;
  if (!custom) code = prelude(k.f16) + await ladderSource(k.name);
  const module = dev.createShaderModule({ code });
  const { p, bgl } = await pipeline(dev, module, k);
  const groups = k.dispatch;
  if (!groups) throw new Error(`${k.name}: the task has no dispatch`);
  const limit = dev.limits.maxComputeWorkgroupsPerDimension;
  if (groups.some((g) => g > limit)) throw new Error(`dispatch of ${groups.join("×")} workgroups: this device allows at most ${limit} per dimension`);

  const aData = pack(inputs.a, n, ld, k.f16);
  const bData = pack(inputs.b, n, ld, k.f16);
  const usage = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST;
  const bufs = [];
  let scoped = true;
  dev.pushErrorScope("validation");
  const buffer = (size, u) => { const x = dev.createBuffer({ size: Math.max(16, Math.ceil(size / 4) * 4), usage: u }); bufs.push(x); return x; };
  try {
    const aBuf = buffer(aData.byteLength, usage);
    const bBuf = buffer(bData.byteLength, usage);
    const cBuf = buffer(n * n * 4, GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST);
    const uBuf = buffer(16, GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST);
    const readBuf = buffer(n * n * 4, GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST);
    dev.queue.writeBuffer(uBuf, 0, new Uint32Array([n, ld, 0, 0]));
    dev.queue.writeBuffer(cBuf, 0, new Float32Array(n * n).fill(NaN)); // a kernel that skips an entry leaves NaN
    await dev.queue.onSubmittedWorkDone();
    const bind = dev.createBindGroup({ layout: bgl, entries: [aBuf, bBuf, cBuf, uBuf].map((buffer, binding) => ({ binding, resource: { buffer } })) });

    let t0 = now();
    dev.queue.writeBuffer(aBuf, 0, aData);
    dev.queue.writeBuffer(bBuf, 0, bData);
    await dev.queue.onSubmittedWorkDone();
    const upload = now() - t0;

    const dispatch = (enc) => {
      const pass = enc.beginComputePass();
      pass.setPipeline(p);
      pass.setBindGroup(0, bind);
      pass.dispatchWorkgroups(groups[0], groups[1] || 1, groups[2] || 1);
      pass.end();
    };
    // Warm-up, timed on the wall clock to size the batches.
    t0 = now();
    let enc = dev.createCommandEncoder();
    dispatch(enc);
    dev.queue.submit([enc.finish()]);
    await dev.queue.onSubmittedWorkDone();
    let warm = now() - t0;
    scoped = false;
    const err = await dev.popErrorScope();
    if (err) throw new Error(err.message);
    if (signal && signal.aborted) throw new Error("stopped");
    const budget = task.budget_s > 0 ? task.budget_s : DEFAULT_BUDGET;
    // The first dispatch also pays for the pipeline's first use: time a second one, unless the
    // first was long already (a slow or software adapter), where that cost is in the noise.
    if (warm < budget / 4) {
      t0 = now();
      enc = dev.createCommandEncoder();
      dispatch(enc);
      dev.queue.submit([enc.finish()]);
      await dev.queue.onSubmittedWorkDone();
      warm = Math.min(warm, now() - t0);
    }

    // Each timed repeat is a batch of dispatches lasting about BATCH_SECONDS by the warm-up's
    // clock, so that neither a coarse clock nor quantised timestamps swamp a short kernel; the
    // repeats stop where they would outlast the budget.
    const batch = Math.min(MAX_BATCH, Math.max(1, Math.ceil(BATCH_SECONDS / Math.max(warm, 1e-6))));
    const repeats = Math.min(task.repeats, Math.max(1, Math.floor(budget / (batch * Math.max(warm, 1e-6)))));
    let seconds = null;
    let method = "timestamp-query";
    if (d.adapter.timestamps) seconds = await timestamps(dev, p, bind, groups, repeats, batch);
    if (!seconds) {
      method = "wall-clock";
      seconds = [];
      for (let r = 0; r < repeats; r++) {
        if (signal && signal.aborted) throw new Error("stopped");
        enc = dev.createCommandEncoder();
        for (let i = 0; i < batch; i++) dispatch(enc);
        t0 = now();
        dev.queue.submit([enc.finish()]);
        await dev.queue.onSubmittedWorkDone();
        seconds.push((now() - t0) / batch);
      }
    }

    t0 = now();
    enc = dev.createCommandEncoder();
    enc.copyBufferToBuffer(cBuf, 0, readBuf, 0, n * n * 4);
    dev.queue.submit([enc.finish()]);
    await readBuf.mapAsync(GPUMapMode.READ);
    const c = new Float32Array(readBuf.getMappedRange(0, n * n * 4).slice(0));
    readBuf.unmap();
    const readback = now() - t0;

    const { rel, checked } = relError(c, reference(inputs, n));
    const out = { kernel: k.name, n, method, batch, seconds, rel_error: rel, checked };
    if (task.transfers) {
      out.upload_seconds = upload;
      out.readback_seconds = readback;
    }
    return out;
  } finally {
    if (scoped) dev.popErrorScope().catch(() => {});
    for (const x of bufs) x.destroy();
  }
}

// timestamps times each repeat as one compute pass of batch dispatches between GPU timestamps, and
// returns the time per dispatch; null when a pair reads zero or backwards (Chrome quantises
// timestamps to 100 µs; then the wall clock is used instead).
async function timestamps(dev, p, bind, groups, repeats, batch) {
  const qs = dev.createQuerySet({ type: "timestamp", count: 2 * repeats });
  const resolve = dev.createBuffer({ size: 16 * repeats, usage: GPUBufferUsage.QUERY_RESOLVE | GPUBufferUsage.COPY_SRC });
  const read = dev.createBuffer({ size: 16 * repeats, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
  try {
    const enc = dev.createCommandEncoder();
    for (let r = 0; r < repeats; r++) {
      const pass = enc.beginComputePass({ timestampWrites: { querySet: qs, beginningOfPassWriteIndex: 2 * r, endOfPassWriteIndex: 2 * r + 1 } });
      pass.setPipeline(p);
      pass.setBindGroup(0, bind);
      for (let i = 0; i < batch; i++) pass.dispatchWorkgroups(groups[0], groups[1] || 1, groups[2] || 1);
      pass.end();
    }
    enc.resolveQuerySet(qs, 0, 2 * repeats, resolve, 0);
    enc.copyBufferToBuffer(resolve, 0, read, 0, 16 * repeats);
    dev.queue.submit([enc.finish()]);
    await read.mapAsync(GPUMapMode.READ);
    const t = new BigInt64Array(read.getMappedRange().slice(0));
    read.unmap();
    const out = [];
    for (let r = 0; r < repeats; r++) {
      const ns = Number(t[2 * r + 1] - t[2 * r]);
      if (!(ns > 0)) return null;
      out.push(ns / 1e9 / batch);
    }
    return out;
  } finally {
    qs.destroy();
    resolve.destroy();
    read.destroy();
  }
}
