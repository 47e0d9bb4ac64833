//! G as a stack of blocks `Linear → [BatchNorm] → activation → [dropout]`.

use ndarray::{s, Array2, ArrayView2, Axis, Zip};
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use super::activation::Activation;
use super::batchnorm::{column_stats, BatchNorm, BnCache, BnGrad};
use super::forward::Forward;
use super::linear::{Linear, LinearGrad};
use crate::Real;

/// One block of G: `Linear → [BatchNorm] → activation → [inverted dropout]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Block<T> {
    /// Dense map `in → out`.
    pub linear: Linear<T>,
    /// BatchNorm over the `out` features, if enabled.
    pub bn: Option<BatchNorm<T>>,
    /// Non-linearity (`Identity` for a last block without activation).
    pub activation: Activation,
    /// Dropout probability p in [0, 1); training mode only.
    pub dropout: f32,
}

/// Gradients of a [`Block`].
#[derive(Clone, Debug, PartialEq)]
pub struct BlockGrad<T> {
    /// Gradients of the dense map.
    pub linear: LinearGrad<T>,
    /// Gradients of γ, β when the block has BatchNorm.
    pub bn: Option<BnGrad<T>>,
}

/// Per-block forward cache.
#[derive(Clone, Debug)]
pub(crate) struct BlockCache<T> {
    bn: Option<BnCache<T>>,
    /// Activation output before dropout (only kept when a mask was applied; otherwise the
    /// block output is the activation output).
    pre_dropout: Option<Array2<T>>,
    /// Dropout mask with entries 0 or 1/(1 − p), `n × out`.
    mask: Option<Array2<T>>,
}

/// Whole-G forward cache.
#[derive(Clone, Debug)]
pub(crate) struct MlpCache<T> {
    /// `hidden[l]` is the input of block `l + 1`. Block 0's input, x, is not copied: the
    /// backward is given it again (a full-batch x is the largest array of a fit). The output of
    /// the last block is not stored here: it is `Pass::z`.
    hidden: Vec<Array2<T>>,
    blocks: Vec<BlockCache<T>>,
}

/// Inverted-dropout mask `n × d`: each entry is 0 with probability `p`, else 1/(1 − p), drawn
/// from `rng` in row-major order.
pub fn dropout_mask<T: Real>(n: usize, d: usize, p: f32, rng: &mut ChaCha8Rng) -> Array2<T> {
    let keep = T::from_f64_(1.0 / (1.0 - p as f64));
    Array2::from_shape_simple_fn((n, d), || if rng.random::<f32>() < p { T::zero() } else { keep })
}

impl<T: Real> Block<T> {
    /// Forward on `x` (`n × in`) → output (`n × out`) and cache. BatchNorm statistics come from
    /// rows `0..fw.stats_rows`; dropout only when `fw.train` and `p > 0`.
    pub(crate) fn forward(
        &self,
        x: ArrayView2<T>,
        fw: &Forward,
        rng: &mut ChaCha8Rng,
    ) -> (Array2<T>, BlockCache<T>) {
        let h = self.linear.forward(x);
        let (mut h, bn) = match &self.bn {
            Some(bn) => {
                let (y, cache) = bn.forward(h, fw.stats_rows);
                (y, Some(cache))
            }
            None => (h, None),
        };
        self.activation.forward_inplace(&mut h);
        if fw.train && self.dropout > 0.0 {
            let mask = dropout_mask::<T>(h.nrows(), h.ncols(), self.dropout, rng);
            let out = &h * &mask;
            (out, BlockCache { bn, pre_dropout: Some(h), mask: Some(mask) })
        } else {
            (h, BlockCache { bn, pre_dropout: None, mask: None })
        }
    }

    /// Backward given the block input `x`, its output `out`, the cache and `d_out = ∂ℓ/∂out`
    /// (consumed). Returns the parameter gradients and, when `need_dx`, ∂ℓ/∂x.
    pub(crate) fn backward(
        &self,
        x: ArrayView2<T>,
        out: ArrayView2<T>,
        cache: &BlockCache<T>,
        mut d: Array2<T>,
        need_dx: bool,
    ) -> (BlockGrad<T>, Option<Array2<T>>) {
        // `d` may cover only the leading rows of the pass (see `Mlp::backward_with_input`).
        let r = d.nrows();
        let act_out = match (&cache.mask, &cache.pre_dropout) {
            (Some(mask), Some(pre)) => {
                Zip::from(&mut d).and(mask.slice(s![..r, ..])).for_each(|d, &m| *d = *d * m);
                pre.slice(s![..r, ..])
            }
            _ => out,
        };
        self.activation.backward_inplace(act_out, &mut d);
        let bn = match (&self.bn, &cache.bn) {
            (Some(bn), Some(c)) => {
                let (g, dx) = bn.backward(c, d);
                d = dx;
                Some(g)
            }
            _ => None,
        };
        let (linear, dx) = self.linear.backward(x, d.view(), need_dx);
        (BlockGrad { linear, bn }, dx)
    }
}

/// G: blocks applied in order; the last block's width is the dimension of Z.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Mlp<T> {
    /// Blocks, input side first.
    pub blocks: Vec<Block<T>>,
}

impl<T: Real> Mlp<T> {
    /// Forward on `x` (`n × in`) → `z` (`n × z_dim`) and the cache for [`Mlp::backward`].
    pub(crate) fn forward(
        &self,
        x: ArrayView2<T>,
        fw: &Forward,
        rng: &mut ChaCha8Rng,
    ) -> (Array2<T>, MlpCache<T>) {
        let nb = self.blocks.len();
        let mut hidden: Vec<Array2<T>> = Vec::with_capacity(nb.saturating_sub(1));
        let mut caches = Vec::with_capacity(nb);
        let mut z = None;
        for (l, block) in self.blocks.iter().enumerate() {
            let input = hidden.last().map_or(x, |h| h.view());
            let (out, cache) = block.forward(input, fw, rng);
            caches.push(cache);
            if l + 1 < nb {
                hidden.push(out);
            } else {
                z = Some(out);
            }
        }
        (z.expect("G has at least one block"), MlpCache { hidden, blocks: caches })
    }

    /// Backward from `dz = ∂ℓ/∂z` (`n × z_dim`, consumed), `x` (`n × in`) and `z` being the
    /// forward's input and output. Returns one gradient per block; ∂ℓ/∂x is not computed.
    pub(crate) fn backward(
        &self,
        cache: &MlpCache<T>,
        x: ArrayView2<T>,
        z: ArrayView2<T>,
        dz: Array2<T>,
    ) -> Vec<BlockGrad<T>> {
        self.backward_with_input(cache, x, z, dz, false).0
    }

    /// [`Mlp::backward`], plus ∂ℓ/∂x (`r × in`) when `need_dx` (a network whose input is another
    /// network's output, e.g. a domain discriminator on Z).
    ///
    /// `dz` (`r × z_dim`) may cover only the leading r ≤ n rows of the pass, every BatchNorm's
    /// statistics rows among them: the result is then the gradient with ∂ℓ/∂z = 0 on the rows
    /// after r, bit for bit (their zero terms would only add exact zeros after the others).
    pub(crate) fn backward_with_input(
        &self,
        cache: &MlpCache<T>,
        x: ArrayView2<T>,
        z: ArrayView2<T>,
        dz: Array2<T>,
        need_dx: bool,
    ) -> (Vec<BlockGrad<T>>, Option<Array2<T>>) {
        let nb = self.blocks.len();
        let mut grads = Vec::with_capacity(nb);
        let r = dz.nrows();
        assert!(r <= z.nrows(), "Mlp::backward: dz has more rows than the pass");
        assert_eq!(x.nrows(), z.nrows(), "Mlp::backward: x and z have different rows");
        let input = |l: usize| if l == 0 { x } else { cache.hidden[l - 1].view() };
        let mut d = dz;
        for l in (0..nb).rev() {
            let out = if l + 1 == nb { z } else { input(l + 1) };
            let (g, dx) = self.blocks[l].backward(
                input(l).slice(s![..r, ..]),
                out.slice(s![..r, ..]),
                &cache.blocks[l],
                d,
                l > 0 || need_dx,
            );
            grads.push(g);
            match dx {
                Some(dx) if l > 0 => d = dx,
                dx => {
                    grads.reverse();
                    return (grads, dx);
                }
            }
        }
        unreachable!("G has at least one block")
    }

    /// Evaluation-mode forward (no dropout, no cache): `x` (`n × in`) → `z`. Each BatchNorm
    /// uses the statistics of `stats_x` (`m × in`, propagated through the same layers) or, when
    /// `None`, of `x` itself.
    pub(crate) fn eval(&self, x: ArrayView2<T>, stats_x: Option<ArrayView2<T>>) -> Array2<T> {
        let stats = self.batch_norm_stats(stats_x.unwrap_or(x));
        self.eval_frozen(x, &stats)
    }

    /// Per block, the BatchNorm statistics `(mean, rstd)` (length = the block's width) of the
    /// rows `stats_x` (`m × in`, m ≥ 1) propagated through the layers in evaluation mode; `None`
    /// for a block without BatchNorm. Freezing these makes a prediction independent of the
    /// training rows ([`Mlp::eval_frozen`]).
    pub(crate) fn batch_norm_stats(&self, stats_x: ArrayView2<T>) -> Vec<Option<BnStats<T>>> {
        // The first layer reads the rows where they are: no copy of the `m × in` input.
        self.batch_norm_stats_from(|first| first.forward(stats_x))
    }

    /// [`Mlp::batch_norm_stats`] of the rows `rows` of `x` (`n × in`), without gathering them
    /// into an `m × in` copy: the first layer runs on [`STATS_BLOCK_ROWS`] of them at a time.
    /// Identical, bit for bit, to `batch_norm_stats(x.select(Axis(0), rows))` (each row's
    /// first-layer output does not depend on the other rows).
    pub(crate) fn batch_norm_stats_rows(
        &self,
        x: ArrayView2<T>,
        rows: &[usize],
    ) -> Vec<Option<BnStats<T>>> {
        self.batch_norm_stats_rows_blocked(x, rows, STATS_BLOCK_ROWS)
    }

    /// [`Mlp::batch_norm_stats_rows`] with `block` rows per first-layer block (tests use tiny ones).
    pub(crate) fn batch_norm_stats_rows_blocked(
        &self,
        x: ArrayView2<T>,
        rows: &[usize],
        block: usize,
    ) -> Vec<Option<BnStats<T>>> {
        self.batch_norm_stats_from(|first| {
            let mut h = Array2::zeros((rows.len(), first.w.ncols()));
            for (idx, mut out) in rows.chunks(block).zip(h.axis_chunks_iter_mut(Axis(0), block)) {
                out.assign(&first.forward(x.select(Axis(0), idx).view()));
            }
            h
        })
    }

    /// The statistics given `first_linear`, which returns the first block's linear output
    /// (`m × width`) for the statistics rows.
    fn batch_norm_stats_from(
        &self,
        first_linear: impl FnOnce(&Linear<T>) -> Array2<T>,
    ) -> Vec<Option<BnStats<T>>> {
        let last_bn = self.blocks.iter().rposition(|b| b.bn.is_some());
        let mut out = Vec::with_capacity(self.blocks.len());
        let mut first_linear = Some(first_linear);
        let mut s: Option<Array2<T>> = None;
        for (l, block) in self.blocks.iter().enumerate() {
            // The statistics rows are only carried as far as the last BatchNorm block.
            if last_bn.is_none_or(|last| l > last) {
                out.push(None);
                continue;
            }
            let mut hs = match (s.take(), first_linear.take()) {
                (Some(prev), _) => block.linear.forward(prev.view()),
                (None, Some(first)) => first(&block.linear),
                (None, None) => unreachable!("the first block computed is block 0"),
            };
            match &block.bn {
                Some(bn) => {
                    let (mean, rstd) = column_stats(hs.view());
                    bn.apply_inplace(&mut hs, &mean, &rstd);
                    out.push(Some(BnStats { mean, rstd }));
                }
                None => out.push(None),
            }
            if Some(l) != last_bn {
                block.activation.forward_inplace(&mut hs);
            }
            s = Some(hs);
        }
        out
    }

    /// Evaluation-mode forward with given BatchNorm statistics (one entry per block, as
    /// [`Mlp::batch_norm_stats`] returns): `x` (`n × in`) → `z` (`n × z_dim`).
    ///
    /// # Panics
    /// If `stats` has another length than the blocks, or lacks statistics for a BatchNorm block
    /// (callers validate a loaded model first).
    pub(crate) fn eval_frozen(&self, x: ArrayView2<T>, stats: &[Option<BnStats<T>>]) -> Array2<T> {
        assert_eq!(
            stats.len(),
            self.blocks.len(),
            "Mlp::eval_frozen: one statistics entry per block"
        );
        // The first layer reads `x` where it is: no copy of the `n × in` input.
        let mut h: Option<Array2<T>> = None;
        for (block, st) in self.blocks.iter().zip(stats) {
            let mut next = block.linear.forward(h.as_ref().map_or(x.view(), |h| h.view()));
            if let Some(bn) = &block.bn {
                let st = st.as_ref().expect("BatchNorm block without statistics");
                bn.apply_inplace(&mut next, &st.mean, &st.rstd);
            }
            block.activation.forward_inplace(&mut next);
            h = Some(next);
        }
        h.unwrap_or_else(|| x.to_owned())
    }
}

/// Rows per block of [`Mlp::batch_norm_stats_rows`]'s first layer (4096 × 2048 f32 = 32 MiB).
pub const STATS_BLOCK_ROWS: usize = 4096;

/// Frozen BatchNorm statistics of one block: column mean and r = (σ² + ε)^(−1/2), each of the
/// block's width.
#[derive(Clone, Debug, PartialEq)]
pub struct BnStats<T> {
    pub mean: ndarray::Array1<T>,
    pub rstd: ndarray::Array1<T>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nn::test_support::{assert_grad_close, fd_grad, random_matrix};
    use rand::SeedableRng;

    #[test]
    fn dropout_with_fixed_mask_gradient_matches_finite_differences() {
        let mut rng = ChaCha8Rng::seed_from_u64(8);
        let mut block = Block {
            linear: Linear::<f64>::init_normal(3, 5, 0.8, &mut rng),
            bn: None,
            activation: Activation::Tanh,
            dropout: 0.5,
        };
        block.linear.b = ndarray::Array1::from(vec![0.1, -0.1, 0.2, 0.0, 0.3]);
        let x = random_matrix(6, 3, &mut rng);
        let r = random_matrix(6, 5, &mut rng);
        let fw = Forward { train: true, stats_rows: 6 };
        // The same seed gives the same mask at every evaluation.
        let loss = |b: &Block<f64>, x: &Array2<f64>| {
            let mut mrng = ChaCha8Rng::seed_from_u64(99);
            (&b.forward(x.view(), &fw, &mut mrng).0 * &r).sum()
        };
        let mut mrng = ChaCha8Rng::seed_from_u64(99);
        let (out, cache) = block.forward(x.view(), &fw, &mut mrng);
        let mask = cache.mask.as_ref().unwrap();
        assert!(mask.iter().any(|&m| m == 0.0) && mask.iter().any(|&m| m == 2.0));
        assert!(mask.iter().all(|&m| m == 0.0 || m == 2.0));
        let (g, dx) = block.backward(x.view(), out.view(), &cache, r.clone(), true);

        let num_x = fd_grad(x.as_slice().unwrap(), |v| {
            loss(&block, &Array2::from_shape_vec((6, 3), v.to_vec()).unwrap())
        });
        assert_grad_close(dx.unwrap().as_slice().unwrap(), &num_x, "dropout dx");
        let num_w = fd_grad(block.linear.w.as_slice().unwrap(), |v| {
            let mut b = block.clone();
            b.linear.w.as_slice_mut().unwrap().copy_from_slice(v);
            loss(&b, &x)
        });
        assert_grad_close(g.linear.dw.as_slice().unwrap(), &num_w, "dropout dW");
    }

    #[test]
    fn dropout_mask_rate_and_scale() {
        let mut rng = ChaCha8Rng::seed_from_u64(9);
        let mask = dropout_mask::<f32>(200, 50, 0.3, &mut rng);
        let zeros = mask.iter().filter(|&&m| m == 0.0).count() as f64 / 10_000.0;
        assert!((zeros - 0.3).abs() < 0.02, "drop rate {zeros}");
        assert!(mask.iter().all(|&m| m == 0.0 || (m - 1.0 / 0.7).abs() < 1e-6));
    }
}
