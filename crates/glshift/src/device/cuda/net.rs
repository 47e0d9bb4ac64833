//! The network and its AdamW state kept on a device for full-batch training: every layer's
//! forward and backward (the device's products, `kernels.cu` for bias, BatchNorm,
//! activations, dropout masks, column sums), the finiteness check and the AdamW step run there;
//! per iteration only the logits (n × c), and Z when asked, come back, and ∂ℓ/∂logits (plus an
//! extra ∂ℓ/∂Z) goes up. The same operations as `nn` in the same order, so results agree with
//! the CPU's to f32 rounding (the column sums add by chunks of rows).
//!
//! Written against [`Backend`]: the GPU is one implementation; the tests' CPU emulation with
//! the same kernels built by the host C compiler (`host_backend`) is the other, so all of
//! this runs in CI (`device::tests::emulated_device_training_matches_the_cpu`; on a GPU,
//! `gpu_full_batch_training_matches_the_cpu_where_a_gpu_is_found`).
//!
//! Dropout masks are drawn on the host from the same generator, in the same order, as the CPU
//! path draws them, and uploaded.

use std::sync::Arc;

use ndarray::{Array2, ArrayView2};
use rand_chacha::ChaCha8Rng;

use super::backend::{Arg, Backend, Src, K};
use super::reduce::{col_reduce, col_reduce_into, Reduce};
use crate::nn::{dropout_mask, Adam, Forward, Network, ParamKind, BN_EPS};

mod backward;
pub(crate) mod layers;

use backward::{block_tail_backward, pair_mut};
use layers::layers_of;

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
struct Cache<B> {
    n: usize,
    stats_rows: usize,
    outs: Vec<B>,
    pre: Vec<Option<B>>,
    masks: Vec<Option<B>>,
    xhat: Vec<Option<B>>,
    rstd: Vec<Option<B>>,
}

/// An extra ∂ℓ/∂Z (`r × z_dim`) for [`DevNet::step`]: none, on the host, or already on the
/// device (added there by kernel terms on the kept Z, `resident`).
pub(crate) enum DzIn<'a, B> {
    None,
    Host(ArrayView2<'a, f32>),
    Device(B),
}

/// The parameters and the optimiser's moments at one moment (the best network so far).
pub(crate) struct DevSnapshot<B> {
    params: Vec<B>,
    m: Vec<B>,
    v: Vec<B>,
    adam: Adam,
}

/// A [`Network`] and its [`Adam`] on device `D`. `net` and `adam` hold the architecture, the
/// optimiser's settings and step count; their tensors are brought up to date by
/// [`DevNet::into_host`].
pub(crate) struct DevNet<D: Backend> {
    dev: Arc<D>,
    net: Network,
    adam: Adam,
    layers: Vec<Layer>,
    kinds: Vec<ParamKind>,
    params: Vec<D::Buf>,
    grads: Vec<D::Buf>,
    m: Vec<D::Buf>,
    v: Vec<D::Buf>,
    cache: Option<Cache<D::Buf>>,
}

impl<D: Backend> DevNet<D> {
    /// Uploads `net` and `adam`'s moments to `dev`.
    pub(crate) fn upload(dev: Arc<D>, net: Network, adam: Adam) -> Result<DevNet<D>, String> {
        let layers = layers_of(&net);
        let kinds = net.params().iter().map(|(k, _)| *k).collect();
        let params =
            net.params().iter().map(|(_, p)| dev.upload(p)).collect::<Result<Vec<_>, _>>()?;
        let grads =
            net.params().iter().map(|(_, p)| dev.zeros(p.len())).collect::<Result<Vec<_>, _>>()?;
        let (ms, vs) = adam.moments();
        let m = ms.iter().map(|x| dev.upload(x)).collect::<Result<Vec<_>, _>>()?;
        let v = vs.iter().map(|x| dev.upload(x)).collect::<Result<Vec<_>, _>>()?;
        Ok(DevNet { dev, net, adam, layers, kinds, params, grads, m, v, cache: None })
    }

    /// Forward over `x` (`n × input_dim`, standard layout; read from the pinned features where
    /// it lies in them): the logits (`n × c`) on the host, and Z (`n × z_dim`) too `with_z`.
    /// With `keep`, the pass is kept for [`DevNet::step`]; dropout masks are drawn from `rng`
    /// when `fw.train`.
    pub(crate) fn forward(
        &mut self,
        x: ArrayView2<f32>,
        fw: &Forward,
        rng: &mut ChaCha8Rng,
        keep: bool,
        with_z: bool,
    ) -> Result<(Array2<f32>, Option<Array2<f32>>), String> {
        let dev = self.dev.clone();
        let n = x.nrows();
        let feat = dev.features(x)?;
        let nb = self.layers.len() - 1;
        let mut cache = Cache {
            n,
            stats_rows: fw.stats_rows,
            outs: Vec::new(),
            pre: Vec::new(),
            masks: Vec::new(),
            xhat: Vec::new(),
            rstd: Vec::new(),
        };
        for l in 0..=nb {
            let layer = &self.layers[l];
            let (din, dout) = (layer.in_dim, layer.out_dim);
            let mut h = dev.zeros(n * dout)?;
            let input = if l == 0 { Src::Feat(&feat) } else { Src::Buf(&cache.outs[l - 1], din) };
            dev.gemm(
                (false, false),
                (n, dout, din),
                input,
                Src::Buf(&self.params[layer.w], dout),
                0.0,
                &mut h,
            )?;
            dev.launch(
                K::AddBias,
                n * dout,
                &mut [
                    Arg::Out(&mut h),
                    Arg::In(&self.params[layer.b]),
                    Arg::I64((n * dout) as i64),
                    Arg::I32(dout as i32),
                ],
            )?;
            if l < nb {
                self.block_tail(&dev, layer, &mut h, &mut cache, fw, rng)?;
                cache.outs.push(h);
                continue;
            }
            let logits =
                Array2::from_shape_vec((n, dout), dev.download(&h)?).map_err(|e| e.to_string())?;
            let z = match (with_z, cache.outs.last()) {
                (true, Some(z)) => Some(
                    Array2::from_shape_vec((n, din), dev.download(z)?)
                        .map_err(|e| e.to_string())?,
                ),
                _ => None,
            };
            if keep {
                self.cache = Some(cache);
            }
            return Ok((logits, z));
        }
        unreachable!("the loop returns at F")
    }

    /// The device.
    pub(crate) fn device(&self) -> &Arc<D> {
        &self.dev
    }

    /// Whether the network has a G block, hence a Z of its own.
    pub(crate) fn has_z(&self) -> bool {
        self.layers.len() > 1
    }

    /// The kept pass's Z on the device and its n × z_dim, if a pass is kept.
    pub(crate) fn kept_z(&self) -> Option<(&D::Buf, usize, usize)> {
        let cache = self.cache.as_ref()?;
        let z = cache.outs.last()?;
        Some((z, cache.n, self.layers.last().expect("F").in_dim))
    }

    /// BatchNorm, activation and dropout of one G block on its linear output `h`, in place.
    fn block_tail(
        &self,
        dev: &D,
        layer: &Layer,
        h: &mut D::Buf,
        cache: &mut Cache<D::Buf>,
        fw: &Forward,
        rng: &mut ChaCha8Rng,
    ) -> Result<(), String> {
        let (n, d) = (cache.n, layer.out_dim);
        let total = (n * d) as i64;
        let (mut xhat, mut rstd) = (None, None);
        if let Some((gamma, beta)) = layer.bn {
            let m = fw.stats_rows;
            if m == 0 || m > n {
                return Err(format!("BatchNorm statistics rows {m} not in 1..={n}"));
            }
            let inv_m = 1.0 / m as f32;
            let mean = col_reduce(dev, Reduce::Sum, h, None, m, d, inv_m)?;
            let mut r = col_reduce(dev, Reduce::SqDev, h, Some(&mean), m, d, 1.0)?;
            dev.launch(
                K::BnRstd,
                d,
                &mut [
                    Arg::Out(&mut r),
                    Arg::I32(d as i32),
                    Arg::F32(inv_m),
                    Arg::F32(BN_EPS as f32),
                ],
            )?;
            let mut xh = dev.zeros(n * d)?;
            let (g, b) = (&self.params[gamma], &self.params[beta]);
            dev.launch(
                K::BnForward,
                n * d,
                &mut [
                    Arg::Out(h),
                    Arg::Out(&mut xh),
                    Arg::In(&mean),
                    Arg::In(&r),
                    Arg::In(g),
                    Arg::In(b),
                    Arg::I64(total),
                    Arg::I32(d as i32),
                ],
            )?;
            (xhat, rstd) = (Some(xh), Some(r));
        }
        dev.launch(K::ActForward, n * d, &mut [Arg::Out(h), Arg::I64(total), Arg::I32(layer.act)])?;
        let (mut pre, mut mask) = (None, None);
        if fw.train && layer.dropout > 0.0 {
            let host = dropout_mask::<f32>(n, d, layer.dropout, rng);
            let mk = dev.upload(host.as_slice().expect("standard layout"))?;
            pre = Some(dev.copy(h)?);
            dev.launch(K::MulInplace, n * d, &mut [Arg::Out(h), Arg::In(&mk), Arg::I64(total)])?;
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
    pub(crate) fn step(
        &mut self,
        x: ArrayView2<f32>,
        d_logits: ArrayView2<f32>,
        d_z: DzIn<'_, D::Buf>,
    ) -> Result<bool, String> {
        let dev = self.dev.clone();
        let DevNet { layers, params, grads, cache, .. } = self;
        let cache = cache.as_ref().ok_or("no forward pass to differentiate")?;
        let r = d_logits.nrows();
        let nb = layers.len() - 1;
        if r > cache.n
            || r < cache.stats_rows.min(cache.n)
            || d_logits.ncols() != layers[nb].out_dim
        {
            return Err(format!(
                "∂ℓ/∂logits is {r} × {}, the pass {} rows",
                d_logits.ncols(),
                cache.n
            ));
        }
        let z_len = r * layers[nb].in_dim;
        let dz_fits = match &d_z {
            DzIn::None => true,
            DzIn::Host(dz) => dz.dim() == (r, layers[nb].in_dim),
            DzIn::Device(dz) => r == cache.n && dev.len(dz) >= z_len,
        };
        if !dz_fits {
            return Err(format!("∂ℓ/∂Z is not {r} × {}", layers[nb].in_dim));
        }
        let mut d_z = Some(d_z);
        let mut d =
            dev.upload(d_logits.as_standard_layout().as_slice().expect("standard layout"))?;
        for l in (0..=nb).rev() {
            let layer = &layers[l];
            let (din, dout) = (layer.in_dim, layer.out_dim);
            if l < nb {
                block_tail_backward(&*dev, layer, cache, l, params, grads, &mut d, r)?;
            }
            let feat =
                if l == 0 { Some(dev.features(x.slice(ndarray::s![..r, ..]))?) } else { None };
            let input = match &feat {
                Some(f) => Src::Feat(f),
                None => Src::Buf(&cache.outs[l - 1], din),
            };
            let (dw, db) = pair_mut(grads, layer.w, layer.b);
            dev.gemm((true, false), (din, dout, r), input, Src::Buf(&d, dout), 0.0, dw)?;
            col_reduce_into(&*dev, Reduce::Sum, &d, None, r, dout, 1.0, db)?;
            if l == 0 {
                break;
            }
            // ∂ℓ/∂(input) = d·Wᵀ, plus the extra ∂ℓ/∂Z at F (accumulated by the product: β = 1).
            let (mut dx, beta) = match d_z.take().filter(|_| l == nb) {
                Some(DzIn::Host(dz)) => {
                    (dev.upload(dz.as_standard_layout().as_slice().expect("standard layout"))?, 1.0)
                }
                Some(DzIn::Device(dz)) => (dz, 1.0),
                _ => (dev.zeros(r * din)?, 0.0),
            };
            dev.gemm(
                (false, true),
                (r, din, dout),
                Src::Buf(&d, dout),
                Src::Buf(&params[layer.w], dout),
                beta,
                &mut dx,
            )?;
            d = dx;
        }
        let finite = self.grads_finite()?;
        if finite {
            self.adam_step()?;
        }
        dev.sync()?;
        Ok(finite)
    }

    /// A copy, on the device, of the parameters and moments now.
    pub(crate) fn snapshot(&self) -> Result<DevSnapshot<D::Buf>, String> {
        let copy =
            |xs: &[D::Buf]| xs.iter().map(|x| self.dev.copy(x)).collect::<Result<Vec<_>, _>>();
        Ok(DevSnapshot {
            params: copy(&self.params)?,
            m: copy(&self.m)?,
            v: copy(&self.v)?,
            adam: self.adam.clone(),
        })
    }

    /// Goes back to `s` (the kept pass is dropped).
    pub(crate) fn restore(&mut self, s: DevSnapshot<D::Buf>) {
        (self.params, self.m, self.v, self.adam, self.cache) = (s.params, s.m, s.v, s.adam, None);
    }

    /// A host copy of the network with the device's parameters now.
    pub(crate) fn network(&self) -> Result<Network, String> {
        let mut net = self.net.clone();
        for (dev, (_, host)) in self.params.iter().zip(net.params_mut()) {
            self.dev.download_into(dev, host)?;
        }
        Ok(net)
    }

    /// The network and optimiser with the device's tensors.
    pub(crate) fn into_host(mut self) -> Result<(Network, Adam), String> {
        for (dev, (_, host)) in self.params.iter().zip(self.net.params_mut()) {
            self.dev.download_into(dev, host)?;
        }
        let (ms, vs) = self.adam.moments_mut();
        for (dev, host) in self.m.iter().zip(ms.iter_mut()).chain(self.v.iter().zip(vs.iter_mut()))
        {
            self.dev.download_into(dev, host)?;
        }
        Ok((self.net, self.adam))
    }
}
