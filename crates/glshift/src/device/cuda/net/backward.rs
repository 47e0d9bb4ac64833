//! The parts of [`DevNet::step`] after the products: the backward of a block's dropout,
//! activation and BatchNorm, the finiteness check of every gradient, and AdamW's step.

use super::{Cache, DevNet, Layer};
use crate::device::cuda::backend::{Arg, Backend, K};
use crate::device::cuda::reduce::{col_reduce_into, Reduce};

impl<D: Backend> DevNet<D> {
    /// Whether every gradient is finite (one flag on the device, set by any NaN or ±∞).
    pub(super) fn grads_finite(&self) -> Result<bool, String> {
        let dev = &self.dev;
        let mut flag = dev.zeros(1)?;
        for grad in self.grads.iter() {
            let len = dev.len(grad);
            dev.launch(
                K::FlagNonfinite,
                len,
                &mut [Arg::In(grad), Arg::I64(len as i64), Arg::Out(&mut flag)],
            )?;
        }
        Ok(dev.download(&flag)?[0] == 0.0)
    }

    /// One AdamW step of every parameter from its gradient, on the device.
    pub(super) fn adam_step(&mut self) -> Result<(), String> {
        let dev = self.dev.clone();
        self.adam.advance();
        for i in 0..self.params.len() {
            let k = self.adam.step_constants(self.kinds[i]);
            let len = dev.len(&self.params[i]);
            let (p, g, m, v) =
                (&mut self.params[i], &self.grads[i], &mut self.m[i], &mut self.v[i]);
            let args = [Arg::Out(p), Arg::In(g), Arg::Out(m), Arg::Out(v), Arg::I64(len as i64)];
            let consts = [k.beta1, k.beta2, k.lr, k.eps, k.bias1, k.bias2, k.keep].map(Arg::F64);
            let mut all: Vec<Arg<'_, D::Buf>> = args.into_iter().chain(consts).collect();
            dev.launch(K::Adam, len, &mut all)?;
        }
        Ok(())
    }
}

/// Backward through block `l`'s dropout, activation and BatchNorm: `d` (r × width) goes from
/// ∂ℓ/∂output to ∂ℓ/∂(linear output); dγ and dβ are written into `grads`.
#[allow(clippy::too_many_arguments)]
pub(super) fn block_tail_backward<D: Backend + ?Sized>(
    dev: &D,
    layer: &Layer,
    cache: &Cache<D::Buf>,
    l: usize,
    params: &[D::Buf],
    grads: &mut [D::Buf],
    d: &mut D::Buf,
    r: usize,
) -> Result<(), String> {
    let w = layer.out_dim;
    let total = (r * w) as i64;
    // The kernels read the leading r rows of the pass's buffers (row-major prefixes).
    let act_out = match (&cache.masks[l], &cache.pre[l]) {
        (Some(mask), Some(pre)) => {
            dev.launch(K::MulInplace, r * w, &mut [Arg::Out(d), Arg::In(mask), Arg::I64(total)])?;
            pre
        }
        _ => &cache.outs[l],
    };
    dev.launch(
        K::ActBackward,
        r * w,
        &mut [Arg::Out(d), Arg::In(act_out), Arg::I64(total), Arg::I32(layer.act)],
    )?;
    if let (Some((gamma, beta)), Some(xhat), Some(rstd)) =
        (layer.bn, &cache.xhat[l], &cache.rstd[l])
    {
        let m = cache.stats_rows;
        let (dgamma, dbeta) = pair_mut(grads, gamma, beta);
        col_reduce_into(dev, Reduce::Sum, d, None, r, w, 1.0, dbeta)?;
        col_reduce_into(dev, Reduce::Dot, d, Some(xhat), r, w, 1.0, dgamma)?;
        let (dgamma, dbeta) = (&grads[gamma], &grads[beta]);
        let args = &mut [
            Arg::Out(d),
            Arg::In(xhat),
            Arg::In(&params[gamma]),
            Arg::In(rstd),
            Arg::In(dbeta),
            Arg::In(dgamma),
            Arg::I64(total),
            Arg::I32(w as i32),
            Arg::I64(m as i64),
            Arg::F32(1.0 / m as f32),
        ];
        dev.launch(K::BnBackward, r * w, args)?;
    }
    Ok(())
}

/// Two distinct tensors of `xs`, both mutable.
pub(super) fn pair_mut<T>(xs: &mut [T], a: usize, b: usize) -> (&mut T, &mut T) {
    assert!(a != b, "two distinct tensors");
    if a < b {
        let (lo, hi) = xs.split_at_mut(b);
        (&mut lo[a], &mut hi[0])
    } else {
        let (lo, hi) = xs.split_at_mut(a);
        (&mut hi[0], &mut lo[b])
    }
}
