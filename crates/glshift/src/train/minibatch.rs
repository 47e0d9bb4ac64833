//! The mini-batch stage of adaptation, for the baselines whose papers train so
//! (`BaselineConfig::minibatch`): the iteration of `adapt` on sampled rows, SGD at an annealed
//! learning rate. Iteration t of T, progress p = t/T:
//!
//! 1. draw b source training rows and b target rows ([`Sampler`]: a seeded shuffle of each
//!    domain, one pass at a time, the last short batch of a pass dropped, as the references'
//!    data loaders);
//! 2. every `Method::full_view_interval` iterations (from t = 0), the evaluation-mode
//!    probabilities of every row: BBSE-QP's estimate (IW-DANN, IW-CDAN: once per pass over the
//!    source; the IW authors' script re-solves less often, docs/baselines.md) and PADA's γ
//!    (every 500 iterations, over all target rows); cached in between;
//! 3. forward of `[source batch; target batch]` (BatchNorm statistics from the source batch),
//!    the method's term on the batch, the (weighted) cross-entropy of the source batch, backward,
//!    SGD with lr_p = lr₀·(1 + αp)^−β; the method's own discriminator follows the same schedule.
//!
//! Deterministic per seed: the sampler draws from its own stream seeded by the fit's seed.

use crate::seeds::{stream_seed, Stream};
use ndarray::{s, Array2};
use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use super::adapt::{adapt_record, source_cross_entropy, Adaptation};
use super::guard::check_finite;
use super::layout::Layout;
use super::records::{IterRecord, Stage};
use crate::config::FitConfig;
use crate::label_shift::{self, ShiftEstimate};
use crate::methods::method::AdaptInputs;
use crate::nn::Forward;
use crate::Result;

/// Adaptation iterations of `cfg.method`: `baselines.iterations` by mini-batch, else `adapt_iters`.
pub(super) fn adapt_iterations(cfg: &FitConfig) -> usize {
    if cfg.baselines.minibatch(cfg.method) {
        cfg.baselines.iterations
    } else {
        cfg.adapt_iters
    }
}

/// Seeded mini-batches of row indices of one domain: shuffled passes, `batch` rows each (all
/// rows when the domain has fewer); a pass's remainder shorter than `batch` is dropped.
#[derive(Clone, Debug)]
pub struct Sampler {
    order: Vec<usize>,
    pos: usize,
    batch: usize,
}

impl Sampler {
    pub fn new(n: usize, batch: usize) -> Self {
        Sampler { order: (0..n).collect(), pos: n, batch: batch.min(n).max(1) }
    }

    /// The next batch (indices in 0..n).
    pub fn next(&mut self, rng: &mut ChaCha8Rng) -> Vec<usize> {
        if self.pos + self.batch > self.order.len() {
            self.order.shuffle(rng);
            self.pos = 0;
        }
        let out = self.order[self.pos..self.pos + self.batch].to_vec();
        self.pos += self.batch;
        out
    }

    /// Batches in one pass over the domain.
    pub fn per_pass(&self) -> usize {
        (self.order.len() / self.batch).max(1)
    }
}

/// The mini-batch state of an adaptation: the two samplers, their stream, and the latest full
/// view (target probabilities and BBSE-QP estimate) the method asked for.
pub(super) struct Batches {
    source: Sampler,
    target: Sampler,
    rng: ChaCha8Rng,
    target_probs: Array2<f32>,
    estimate: Option<ShiftEstimate>,
    /// Temperature of the cached view (1 when not calibrating).
    temperature: f64,
}

impl Batches {
    pub fn new(layout: &Layout, cfg: &FitConfig) -> Self {
        let b = cfg.baselines.batch_size;
        let n_target = layout.n_rows() - layout.target_offset();
        Batches {
            source: Sampler::new(layout.n_train(), b),
            target: Sampler::new(n_target, b),
            rng: ChaCha8Rng::seed_from_u64(stream_seed(cfg.seed, Stream::BaselineSampler)),
            target_probs: Array2::zeros((0, layout.c)),
            estimate: None,
            temperature: 1.0,
        }
    }
}

impl Adaptation<'_, '_> {
    /// One mini-batch iteration `it` of `iters` (recorded as `iter`); the parameters are updated.
    pub(super) fn minibatch_step(
        &mut self,
        batches: &mut Batches,
        it: usize,
        iter: usize,
        iters: usize,
    ) -> Result<IterRecord> {
        let (layout, cfg) = (self.layout, self.cfg);
        let progress = it as f64 / iters as f64;
        let temperature = self.refresh_full_view(batches, it)?;
        let src = batches.source.next(&mut batches.rng);
        let tgt = batches.target.next(&mut batches.rng);
        let off = layout.target_offset();
        let rows: Vec<usize> = src.iter().copied().chain(tgt.iter().map(|&j| off + j)).collect();
        let x = layout.gather(&rows)?;
        let ys: Vec<usize> = src.iter().map(|&i| layout.y_train[i]).collect();
        let nb = src.len();
        let pass = self.trainer.sgd().0.forward(x.view(), &Forward::training(nb), &mut self.rng);
        let (z, logits) = (&pass.z, &pass.logits);
        let out = self.method.step(&AdaptInputs {
            zs: z.slice(s![..nb, ..]),
            logits_s: logits.slice(s![..nb, ..]),
            ys: &ys,
            zt: z.slice(s![nb.., ..]),
            logits_t: logits.slice(s![nb.., ..]),
            target_probs: batches.target_probs.view(),
            progress,
            estimate: batches.estimate.as_ref(),
            confident: &[],
            pseudo_labels: &[],
            prior: &layout.source_prior,
        })?;
        let (ce, d_train_logits) =
            source_cross_entropy(logits.slice(s![..nb, ..]), &ys, &out.ce_weights);
        let total = out.terms.iter().fold(ce, |t, v| t + v);
        check_finite("cross-entropy", it, Stage::Adapt, ce, cfg)?;
        for (what, v) in out.checked_values() {
            check_finite(what, it, Stage::Adapt, v, cfg)?;
        }
        self.trainer.sgd().1.lr = cfg.baselines.annealed_lr(progress);
        self.sgd_step(it, (x.view(), &pass), (nb, nb), &d_train_logits, &out)?;
        let target_prior = batches.estimate.as_ref().map(|e| e.target_prior.clone());
        Ok(adapt_record(iter, (ce, total), &out, 0, temperature, target_prior))
    }

    /// Recomputes the cached full view when the method's interval says so; returns the
    /// temperature of the latest view (1 when none or not calibrating).
    fn refresh_full_view(&mut self, batches: &mut Batches, it: usize) -> Result<f64> {
        let Some(interval) = self.method.full_view_interval(batches.source.per_pass()) else {
            return Ok(1.0);
        };
        let layout = self.layout;
        if it % interval.max(1) != 0 {
            return Ok(batches.temperature);
        }
        let logits = if layout.is_borrowed() {
            // Large data (`training`): in chunks, BatchNorm frozen on the sample of `chunked`.
            let stats_rows = super::chunked::bn_stats_rows(layout, self.cfg);
            let eval = super::chunked::EvalNet::new(
                self.trainer.sgd().0,
                layout,
                &stats_rows,
                self.cfg.minibatch.chunk_rows,
            )?;
            eval.range(layout, 0..layout.n_rows())?.1
        } else {
            let fw = Forward::evaluation(layout.n_train());
            self.trainer.sgd().0.forward(layout.x_all.view(), &fw, &mut self.rng).logits
        };
        let temperature = if self.cfg.label_shift.calibrate
            && self.method.calibrates()
            && layout.n_hold() > 0
        {
            label_shift::fit_temperature(logits.slice(s![layout.hold_rows(), ..]), &layout.y_hold)?
        } else {
            1.0
        };
        let probs = label_shift::softmax_with_temperature(logits.view(), temperature);
        batches.target_probs = probs.slice(s![layout.target_offset().., ..]).to_owned();
        if self.method.needs_shift_estimate() {
            batches.estimate = Some(self.estimate(probs.view())?);
        }
        batches.temperature = temperature;
        Ok(temperature)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sampler_covers_each_pass_once_and_is_seeded() {
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let mut s = Sampler::new(10, 3);
        assert_eq!(s.per_pass(), 3);
        let mut seen: Vec<usize> = (0..3).flat_map(|_| s.next(&mut rng)).collect();
        seen.sort_unstable();
        seen.dedup();
        assert_eq!(seen.len(), 9, "one pass draws distinct rows");
        let draw = |seed| {
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            let mut s = Sampler::new(10, 3);
            (0..7).map(|_| s.next(&mut rng)).collect::<Vec<_>>()
        };
        assert_eq!(draw(4), draw(4));
        assert_ne!(draw(4), draw(5));
        let mut small = Sampler::new(2, 36);
        assert_eq!(small.next(&mut rng).len(), 2, "a domain smaller than the batch is one batch");
    }
}
