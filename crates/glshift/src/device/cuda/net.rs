//! The network and its AdamW state kept on the GPU for full-batch training: every layer's
//! forward and backward (cuBLAS products, `net_kernels.cu` for bias, BatchNorm, activations,
//! dropout masks, column sums), the finiteness check and the AdamW step run there; per
//! iteration only the logits (n × c) come back and ∂ℓ/∂logits goes up. The same operations as
//! `nn` in the same order, so results agree with the CPU's to f32 rounding (the column sums add
//! in another order); `device::tests::gpu_*` checks that, `net_kernels_host` each kernel.
//!
//! Dropout masks are drawn on the host from the same generator, in the same order, as the CPU
//! path draws them, and uploaded.

use std::sync::Arc;

use cudarc::driver::{CudaSlice, CudaView, PushKernelArg};
use ndarray::{Array2, ArrayView2};
use rand_chacha::ChaCha8Rng;

use super::kernels::launch_config;
use super::{err, Gpu, Inner};
use crate::nn::{dropout_mask, Activation, Adam, Forward, Network, ParamKind, BN_EPS};

/// Rows per partial column sum: chunks × width threads keep the GPU busy at any width.
const CHUNK_ROWS: usize = 128;

/// The kernel's code for an activation (`net_kernels.cu`, `act_forward`).
pub(crate) fn act_kind(a: Activation) -> i32 {
    match a {
        Activation::Relu => 0,
        Activation::LeakyRelu => 1,
        Activation::Elu => 2,
        Activation::Tanh => 3,
        Activation::Identity => 4,
    }
}

macro_rules! launch {
    ($g:expr, $f:ident, $total:expr, [$($arg:expr),* $(,)?]) => {{
        let total: usize = $total;
        let mut lb = $g.stream.launch_builder(&$g.net.$f);
        $( let arg = $arg; lb.arg(arg); )*
        // SAFETY: every caller sizes the buffers it passes for `total` elements of the kernel's
        // loop (the shapes are the layer's, checked when the network was uploaded).
        unsafe { lb.launch(launch_config(total.max(1))) }.map(|_| ()).map_err(err(concat!("kernel ", stringify!($f))))
    }};
}

/// One layer: G's blocks, then F (no BatchNorm, identity, no dropout). Indices into the
/// parameter tensors, in `Network::params`'s order.
struct Layer {
    w: usize,
    b: usize,
    bn: Option<(usize, usize)>,
    in_dim: usize,
    out_dim: usize,
    act: i32,
    dropout: f32,
}

/// A forward pass's buffers for the backward: per G block its output (after dropout), the
/// activation output before dropout and the mask (with dropout), x̂ and r (with BatchNorm).
struct Cache {
    n: usize,
    stats_rows: usize,
    outs: Vec<CudaSlice<f32>>,
    pre: Vec<Option<CudaSlice<f32>>>,
    masks: Vec<Option<CudaSlice<f32>>>,
    xhat: Vec<Option<CudaSlice<f32>>>,
    rstd: Vec<Option<CudaSlice<f32>>>,
}

/// The parameters and the optimiser's moments at one moment (the best network so far).
pub(crate) struct DevSnapshot {
    params: Vec<CudaSlice<f32>>,
    m: Vec<CudaSlice<f32>>,
    v: Vec<CudaSlice<f32>>,
    adam: Adam,
}

/// A [`Network`] and its [`Adam`] on the GPU. `net` and `adam` hold the architecture, the
/// optimiser's settings and step count; their tensors are brought up to date by
/// [`DevNet::into_host`].
pub(crate) struct DevNet {
    gpu: Arc<Gpu>,
    net: Network,
    adam: Adam,
    layers: Vec<Layer>,
    kinds: Vec<ParamKind>,
    params: Vec<CudaSlice<f32>>,
    grads: Vec<CudaSlice<f32>>,
    m: Vec<CudaSlice<f32>>,
    v: Vec<CudaSlice<f32>>,
    cache: Option<Cache>,
}

fn layers_of(net: &Network) -> Vec<Layer> {
    let mut layers = Vec::new();
    let mut next = 0;
    for block in &net.g.blocks {
        let (w, b) = (next, next + 1);
        next += 2;
        let bn = block.bn.as_ref().map(|_| {
            next += 2;
            (next - 2, next - 1)
        });
        let (in_dim, out_dim) = (block.linear.in_dim(), block.linear.out_dim());
        layers.push(Layer { w, b, bn, in_dim, out_dim, act: act_kind(block.activation), dropout: block.dropout });
    }
    let (in_dim, out_dim) = (net.f.in_dim(), net.f.out_dim());
    layers.push(Layer { w: next, b: next + 1, bn: None, in_dim, out_dim, act: act_kind(Activation::Identity), dropout: 0.0 });
    layers
}

impl DevNet {
    /// Uploads `net` and `adam`'s moments to `gpu`.
    pub(crate) fn upload(gpu: Arc<Gpu>, net: Network, adam: Adam) -> Result<DevNet, String> {
        let layers = layers_of(&net);
        let (kinds, params, grads, m, v) = {
            let g = gpu.lock()?;
            let up = |x: &[f32]| g.stream.clone_htod(x).map_err(err("uploading the network"));
            let params = net.params().iter().map(|(_, p)| up(p)).collect::<Result<Vec<_>, _>>()?;
            let grads = net.params().iter().map(|(_, p)| g.stream.alloc_zeros::<f32>(p.len()).map_err(err("allocating gradients"))).collect::<Result<Vec<_>, _>>()?;
            let (ms, vs) = adam.moments();
            let m = ms.iter().map(|x| up(x)).collect::<Result<Vec<_>, _>>()?;
            let v = vs.iter().map(|x| up(x)).collect::<Result<Vec<_>, _>>()?;
            (net.params().iter().map(|(k, _)| *k).collect(), params, grads, m, v)
        };
        Ok(DevNet { gpu, net, adam, layers, kinds, params, grads, m, v, cache: None })
    }

    /// Forward over `x` (`n × input_dim`, standard layout; read from the pinned features where
    /// it lies in them): the logits (`n × c`) on the host, and Z (`n × z_dim`) too `with_z`.
    /// With `keep`, the pass is kept for [`DevNet::step`]; dropout masks are drawn from `rng`
    /// when `fw.train`.
    pub(crate) fn forward(&mut self, x: ArrayView2<f32>, fw: &Forward, rng: &mut ChaCha8Rng, keep: bool, with_z: bool) -> Result<(Array2<f32>, Option<Array2<f32>>), String> {
        let gpu = self.gpu.clone();
        let g = gpu.lock()?;
        let n = x.nrows();
        let xo = g.operand(x)?;
        if xo.trans {
            return Err("the features are not in row-major layout".into());
        }
        let nb = self.layers.len() - 1;
        let mut cache = Cache { n, stats_rows: fw.stats_rows, outs: Vec::new(), pre: Vec::new(), masks: Vec::new(), xhat: Vec::new(), rstd: Vec::new() };
        for l in 0..=nb {
            let layer = &self.layers[l];
            let mut h = g.stream.alloc_zeros::<f32>(n * layer.out_dim).map_err(err("allocating activations"))?;
            let (input, ld) = if l == 0 { (g.view(&xo.buf), xo.ld) } else { (cache.outs[l - 1].slice(..), layer.in_dim) };
            let w = self.params[layer.w].slice(..);
            g.gemm_rm((false, false), (n, layer.out_dim, layer.in_dim), 1.0, (&input, ld), (&w, layer.out_dim), 0.0, (&mut h.slice_mut(..), layer.out_dim))?;
            launch!(g, add_bias, n * layer.out_dim, [&mut h, &self.params[layer.b], &((n * layer.out_dim) as i64), &(layer.out_dim as i32)])?;
            if l == nb {
                let logits = g.stream.clone_dtoh(&h).map_err(err("downloading the logits"))?;
                let logits = Array2::from_shape_vec((n, layer.out_dim), logits).map_err(|e| e.to_string())?;
                let z = match (with_z, cache.outs.last()) {
                    (true, Some(z)) => Some(g.stream.clone_dtoh(z).map_err(err("downloading Z"))?),
                    _ => None,
                };
                g.stream.synchronize().map_err(err("synchronising"))?;
                let z = z.map(|z| Array2::from_shape_vec((n, layer.in_dim), z).map_err(|e| e.to_string())).transpose()?;
                if keep {
                    self.cache = Some(cache);
                }
                return Ok((logits, z));
            }
            self.block_tail(&g, layer, &mut h, &mut cache, fw, rng)?;
            cache.outs.push(h);
        }
        unreachable!("the loop returns at F")
    }

    /// BatchNorm, activation and dropout of one G block on its linear output `h`, in place.
    fn block_tail(&self, g: &Inner, layer: &Layer, h: &mut CudaSlice<f32>, cache: &mut Cache, fw: &Forward, rng: &mut ChaCha8Rng) -> Result<(), String> {
        let (n, d) = (cache.n, layer.out_dim);
        let total = (n * d) as i64;
        let (mut xhat, mut rstd) = (None, None);
        if let Some((gamma, beta)) = layer.bn {
            let m = fw.stats_rows;
            if m == 0 || m > n {
                return Err(format!("BatchNorm statistics rows {m} not in 1..={n}"));
            }
            let inv_m = 1.0 / m as f32;
            let mean = col_reduce(g, Reduce::Sum, &h.slice(..), None, m, d, inv_m)?;
            let mut r = col_reduce(g, Reduce::SqDev, &h.slice(..), Some(&mean.slice(..)), m, d, 1.0)?;
            launch!(g, bn_rstd, d, [&mut r, &(d as i32), &inv_m, &(BN_EPS as f32)])?;
            let mut xh = g.stream.alloc_zeros::<f32>(n * d).map_err(err("allocating x̂"))?;
            launch!(g, bn_forward, n * d, [&mut *h, &mut xh, &mean, &r, &self.params[gamma], &self.params[beta], &total, &(d as i32)])?;
            (xhat, rstd) = (Some(xh), Some(r));
        }
        launch!(g, act_forward, n * d, [&mut *h, &total, &layer.act])?;
        let (mut pre, mut mask) = (None, None);
        if fw.train && layer.dropout > 0.0 {
            let host = dropout_mask::<f32>(n, d, layer.dropout, rng);
            let mk = g.stream.clone_htod(host.as_slice().expect("standard layout")).map_err(err("uploading a dropout mask"))?;
            pre = Some(g.stream.clone_dtod(&*h).map_err(err("copying activations"))?);
            launch!(g, mul_inplace, n * d, [&mut *h, &mk, &total])?;
            mask = Some(mk);
        }
        cache.pre.push(pre);
        cache.masks.push(mask);
        cache.xhat.push(xhat);
        cache.rstd.push(rstd);
        Ok(())
    }

    /// Backward of the kept pass with `d_logits` (`r × c`) on its leading r rows (the rows after
    /// them carry none) plus, if given, `d_z` (`r × z_dim`), an extra ∂ℓ/∂Z; `x` is the pass's
    /// input. Then, when every gradient is finite, one AdamW step. Returns whether the
    /// gradients were finite (nothing changes otherwise).
    pub(crate) fn step(&mut self, x: ArrayView2<f32>, d_logits: ArrayView2<f32>, d_z: Option<ArrayView2<f32>>) -> Result<bool, String> {
        let gpu = self.gpu.clone();
        let g = gpu.lock()?;
        let DevNet { layers, params, grads, cache, .. } = self;
        let cache = cache.as_ref().ok_or("no forward pass to differentiate")?;
        let r = d_logits.nrows();
        let nb = layers.len() - 1;
        if r > cache.n || r < cache.stats_rows.min(cache.n) || d_logits.ncols() != layers[nb].out_dim {
            return Err(format!("∂ℓ/∂logits is {r} × {}, the pass {} rows", d_logits.ncols(), cache.n));
        }
        if d_z.is_some_and(|dz| dz.dim() != (r, layers[nb].in_dim)) {
            return Err(format!("∂ℓ/∂Z is not {r} × {}", layers[nb].in_dim));
        }
        let dl = d_logits.as_standard_layout();
        let mut d = g.stream.clone_htod(dl.as_slice().expect("standard layout")).map_err(err("uploading ∂ℓ/∂logits"))?;
        for l in (0..=nb).rev() {
            let layer = &layers[l];
            let (din, dout) = (layer.in_dim, layer.out_dim);
            if l < nb {
                block_tail_backward(&g, layer, cache, l, params, grads, &mut d, r)?;
            }
            let xo = if l == 0 { Some(g.operand(x.slice(ndarray::s![..r, ..]))?) } else { None };
            let (input, ld) = match &xo {
                Some(o) => (g.view(&o.buf), o.ld),
                None => (cache.outs[l - 1].slice(..r * din), din),
            };
            let (dw, db) = pair_mut(grads, layer.w, layer.b);
            g.gemm_rm((true, false), (din, dout, r), 1.0, (&input, ld), (&d.slice(..), dout), 0.0, (&mut dw.slice_mut(..), dout))?;
            col_reduce_into(&g, Reduce::Sum, &d.slice(..), None, r, dout, 1.0, db)?;
            if l == 0 {
                break;
            }
            // ∂ℓ/∂(input) = d·Wᵀ, plus the extra ∂ℓ/∂Z at F (accumulated by the product: β = 1).
            let (mut dx, beta) = match d_z.filter(|_| l == nb) {
                Some(dz) => {
                    let dz = dz.as_standard_layout();
                    (g.stream.clone_htod(dz.as_slice().expect("standard layout")).map_err(err("uploading ∂ℓ/∂Z"))?, 1.0)
                }
                None => (g.stream.alloc_zeros::<f32>(r * din).map_err(err("allocating ∂ℓ/∂x"))?, 0.0),
            };
            let w = params[layer.w].slice(..);
            g.gemm_rm((false, true), (r, din, dout), 1.0, (&d.slice(..), dout), (&w, dout), beta, (&mut dx.slice_mut(..), din))?;
            d = dx;
        }
        let mut flag = g.stream.alloc_zeros::<i32>(1).map_err(err("allocating a flag"))?;
        for grad in grads.iter() {
            launch!(g, flag_nonfinite, grad.len(), [grad, &(grad.len() as i64), &mut flag])?;
        }
        let flag = g.stream.clone_dtoh(&flag).map_err(err("downloading a flag"))?;
        g.stream.synchronize().map_err(err("synchronising"))?;
        let finite = flag[0] == 0;
        if finite {
            self.adam.advance();
            for i in 0..self.params.len() {
                let k = self.adam.step_constants(self.kinds[i]);
                let len = self.params[i].len();
                launch!(g, adam, len, [&mut self.params[i], &self.grads[i], &mut self.m[i], &mut self.v[i], &(len as i64),
                    &k.beta1, &k.beta2, &k.lr, &k.eps, &k.bias1, &k.bias2, &k.keep])?;
            }
        }
        g.stream.synchronize().map_err(err("synchronising"))?;
        Ok(finite)
    }

    /// A copy, on the GPU, of the parameters and moments now.
    pub(crate) fn snapshot(&self) -> Result<DevSnapshot, String> {
        let g = self.gpu.lock()?;
        let copy = |xs: &[CudaSlice<f32>]| xs.iter().map(|x| g.stream.clone_dtod(x).map_err(err("copying the network"))).collect::<Result<Vec<_>, _>>();
        Ok(DevSnapshot { params: copy(&self.params)?, m: copy(&self.m)?, v: copy(&self.v)?, adam: self.adam.clone() })
    }

    /// Goes back to `s` (the kept pass is dropped).
    pub(crate) fn restore(&mut self, s: DevSnapshot) {
        (self.params, self.m, self.v, self.adam, self.cache) = (s.params, s.m, s.v, s.adam, None);
    }

    /// The network and optimiser with the GPU's tensors.
    pub(crate) fn into_host(mut self) -> Result<(Network, Adam), String> {
        let g = self.gpu.lock()?;
        let down = |x: &CudaSlice<f32>, into: &mut [f32]| -> Result<(), String> {
            g.stream.memcpy_dtoh(x, into).map_err(err("downloading the network"))
        };
        for (dev, (_, host)) in self.params.iter().zip(self.net.params_mut()) {
            down(dev, host)?;
        }
        let (ms, vs) = self.adam.moments_mut();
        for (dev, host) in self.m.iter().zip(ms.iter_mut()).chain(self.v.iter().zip(vs.iter_mut())) {
            down(dev, host)?;
        }
        g.stream.synchronize().map_err(err("synchronising"))?;
        drop(g);
        Ok((self.net, self.adam))
    }
}

/// Backward through block `l`'s dropout, activation and BatchNorm: `d` (r × width) goes from
/// ∂ℓ/∂output to ∂ℓ/∂(linear output); dγ and dβ are written into `grads`.
#[allow(clippy::too_many_arguments)]
fn block_tail_backward(
    g: &Inner,
    layer: &Layer,
    cache: &Cache,
    l: usize,
    params: &[CudaSlice<f32>],
    grads: &mut [CudaSlice<f32>],
    d: &mut CudaSlice<f32>,
    r: usize,
) -> Result<(), String> {
    let w = layer.out_dim;
    let total = (r * w) as i64;
    let act_out = match (&cache.masks[l], &cache.pre[l]) {
        (Some(mask), Some(pre)) => {
            launch!(g, mul_inplace, r * w, [&mut *d, &mask.slice(..r * w), &total])?;
            pre.slice(..r * w)
        }
        _ => cache.outs[l].slice(..r * w),
    };
    launch!(g, act_backward, r * w, [&mut *d, &act_out, &total, &layer.act])?;
    if let (Some((gamma, beta)), Some(xhat), Some(rstd)) = (layer.bn, &cache.xhat[l], &cache.rstd[l]) {
        let m = cache.stats_rows;
        let xh = xhat.slice(..r * w);
        let (dgamma, dbeta) = pair_mut(grads, gamma, beta);
        col_reduce_into(g, Reduce::Sum, &d.slice(..), None, r, w, 1.0, dbeta)?;
        col_reduce_into(g, Reduce::Dot, &d.slice(..), Some(&xh), r, w, 1.0, dgamma)?;
        let (dgamma, dbeta) = (&grads[gamma], &grads[beta]);
        launch!(g, bn_backward, r * w, [&mut *d, &xh, &params[gamma], rstd, dbeta, dgamma, &total, &(w as i32), &(m as i64), &(1.0 / m as f32)])?;
    }
    Ok(())
}

/// Two distinct tensors of `xs`, both mutable.
fn pair_mut<T>(xs: &mut [T], a: usize, b: usize) -> (&mut T, &mut T) {
    assert!(a != b, "two distinct tensors");
    if a < b {
        let (lo, hi) = xs.split_at_mut(b);
        (&mut lo[a], &mut hi[0])
    } else {
        let (lo, hi) = xs.split_at_mut(a);
        (&mut hi[0], &mut lo[b])
    }
}

/// Which column reduction `col_reduce` runs.
#[derive(Clone, Copy)]
enum Reduce {
    /// Σ_r a[r, j].
    Sum,
    /// Σ_r (a[r, j] − b[j])² (`b` the mean, length d).
    SqDev,
    /// Σ_r a[r, j]·b[r, j].
    Dot,
}

/// `scale`·(the reduction over the first `rows` rows of `a`, width `d`) into a new buffer.
fn col_reduce(g: &Inner, what: Reduce, a: &CudaView<f32>, b: Option<&CudaView<f32>>, rows: usize, d: usize, scale: f32) -> Result<CudaSlice<f32>, String> {
    let mut out = g.stream.alloc_zeros::<f32>(d).map_err(err("allocating column sums"))?;
    col_reduce_into(g, what, a, b, rows, d, scale, &mut out)?;
    Ok(out)
}

/// [`col_reduce`] into `out` (length d): partial sums over chunks of [`CHUNK_ROWS`] rows,
/// then their sum in chunk order (deterministic).
#[allow(clippy::too_many_arguments)]
fn col_reduce_into(g: &Inner, what: Reduce, a: &CudaView<f32>, b: Option<&CudaView<f32>>, rows: usize, d: usize, scale: f32, out: &mut CudaSlice<f32>) -> Result<(), String> {
    let chunks = rows.div_ceil(CHUNK_ROWS).max(1);
    let mut part = g.stream.alloc_zeros::<f32>(chunks * d).map_err(err("allocating partial sums"))?;
    let (ri, di, ci) = (rows as i32, d as i32, CHUNK_ROWS as i32);
    match (what, b) {
        (Reduce::Sum, _) => launch!(g, col_sum_part, chunks * d, [a, &mut part, &ri, &di, &ci])?,
        (Reduce::SqDev, Some(b)) => launch!(g, col_sqdev_part, chunks * d, [a, b, &mut part, &ri, &di, &ci])?,
        (Reduce::Dot, Some(b)) => launch!(g, col_dot_part, chunks * d, [a, b, &mut part, &ri, &di, &ci])?,
        (_, None) => return Err("a column reduction lacks its second operand".into()),
    }
    launch!(g, col_finish, d, [&part, &mut *out, &(chunks as i32), &di, &scale])
}
