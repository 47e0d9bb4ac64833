//! Bounded-memory pieces of mini-batch training (`training`, `config::training`): evaluation
//! passes in row chunks with frozen BatchNorm statistics, and the class-stratified sampler.
//!
//! Evaluation mode normalises every BatchNorm with the statistics of a fixed seeded sample of
//! the source training rows (`minibatch.bn_stats_rows`, all of them when fewer): full-batch
//! training uses all training rows, which a mini-batch fit never holds at once. The fitted
//! model freezes the same statistics (`Fitted::bn_stats_rows`).

use crate::seeds::{stream_seed, Stream};
use std::ops::Range;

use ndarray::{s, Array2, ArrayView2};
use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use super::layout::Layout;
use crate::config::FitConfig;
use crate::data::Rows;
use crate::nn::{BnStats, Network};
use crate::Result;

/// The seeded sample of source training rows (indices into the stacked order, ascending) whose
/// statistics evaluation-mode BatchNorm uses: all training rows when there are at most
/// `minibatch.bn_stats_rows`.
pub(super) fn bn_stats_rows(layout: &Layout, cfg: &FitConfig) -> Vec<usize> {
    let n = layout.n_train();
    let k = cfg.minibatch.bn_stats_rows.min(n);
    let mut rows: Vec<usize> = (0..n).collect();
    if k < n {
        let mut rng = ChaCha8Rng::seed_from_u64(stream_seed(cfg.seed, Stream::BnStats));
        rows.shuffle(&mut rng);
        rows.truncate(k);
        rows.sort_unstable();
    }
    rows
}

/// A network in evaluation mode with BatchNorm statistics frozen from the sample rows.
pub(super) struct EvalNet<'n> {
    pub net: &'n Network,
    pub stats: Vec<Option<BnStats<f32>>>,
    chunk: usize,
}

impl<'n> EvalNet<'n> {
    /// Freezes the statistics of `stats_rows` (stacked order) for `net`.
    pub fn new(
        net: &'n Network,
        layout: &Layout,
        stats_rows: &[usize],
        chunk: usize,
    ) -> Result<Self> {
        Ok(Self::from_rows(net, layout.gather(stats_rows)?.view(), chunk))
    }

    /// Freezes the statistics of the rows `x` (already gathered by the caller).
    pub fn from_rows(net: &'n Network, x: ArrayView2<f32>, chunk: usize) -> Self {
        EvalNet { net, stats: net.batch_norm_stats(x), chunk: chunk.max(1) }
    }

    /// `(Z, logits)` of the stacked rows `range` (`len × z_dim`, `len × c`), chunk by chunk.
    /// Errors: a file the rows are read from could not be read, or changed.
    pub fn range(
        &self,
        layout: &Layout,
        range: Range<usize>,
    ) -> Result<(Array2<f32>, Array2<f32>)> {
        let start = range.start;
        self.in_chunks(range.len(), |r| {
            Ok(self
                .net
                .eval_frozen(layout.chunk(start + r.start..start + r.end)?.view(), &self.stats))
        })
    }

    /// `(Z, logits)` of `x`'s rows in order (in memory or in a file), chunk by chunk.
    pub fn rows(&self, x: Rows) -> Result<(Array2<f32>, Array2<f32>)> {
        self.in_chunks(x.nrows(), |r| Ok(self.net.eval_frozen(x.block(r)?.view(), &self.stats)))
    }

    /// Runs `eval` on rows `0..n` a chunk at a time and stacks its `(Z, logits)`.
    fn in_chunks(
        &self,
        n: usize,
        eval: impl Fn(Range<usize>) -> Result<(Array2<f32>, Array2<f32>)>,
    ) -> Result<(Array2<f32>, Array2<f32>)> {
        let mut z = Array2::<f32>::zeros((n, self.net.z_dim()));
        let mut logits = Array2::<f32>::zeros((n, self.net.n_classes()));
        for at in (0..n).step_by(self.chunk) {
            let end = (at + self.chunk).min(n);
            let (zc, lc) = eval(at..end)?;
            z.slice_mut(s![at..end, ..]).assign(&zc);
            logits.slice_mut(s![at..end, ..]).assign(&lc);
        }
        Ok((z, logits))
    }
}

/// Class-stratified batches of rows: each class keeps its own seeded shuffle, and a batch of
/// size b takes max(1, round(b·n_k/n)) rows of every class k that has rows (so every class is
/// in every batch, in about its share), cycling through each class's rows pass by pass.
#[derive(Clone, Debug)]
pub(super) struct StratifiedSampler {
    /// Per class: its rows (any index space), the position in its current pass, its quota.
    classes: Vec<(Vec<usize>, usize, usize)>,
}

impl StratifiedSampler {
    /// `rows[i]` has label `labels[i]` (< `c`).
    pub fn new(rows: &[usize], labels: &[usize], c: usize, batch: usize) -> Self {
        let mut by_class = vec![Vec::new(); c];
        for (&r, &k) in rows.iter().zip(labels) {
            by_class[k].push(r);
        }
        let n = rows.len().max(1) as f64;
        let classes = by_class
            .into_iter()
            .filter(|v| !v.is_empty())
            .map(|v| {
                let quota =
                    ((batch as f64 * v.len() as f64 / n).round() as usize).clamp(1, v.len());
                let len = v.len();
                (v, len, quota)
            })
            .collect();
        StratifiedSampler { classes }
    }

    /// The next batch (class by class; reshuffles a class whose pass is used up).
    pub fn next(&mut self, rng: &mut ChaCha8Rng) -> Vec<usize> {
        let mut out = Vec::new();
        for (rows, pos, quota) in &mut self.classes {
            if *pos + *quota > rows.len() {
                rows.shuffle(rng);
                *pos = 0;
            }
            out.extend_from_slice(&rows[*pos..*pos + *quota]);
            *pos += *quota;
        }
        out
    }

    pub fn is_empty(&self) -> bool {
        self.classes.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stratified_batches_hold_every_class_in_its_share_and_are_seeded() {
        let labels: Vec<usize> = (0..1000)
            .map(|i| {
                if i < 900 {
                    0
                } else if i < 990 {
                    1
                } else {
                    2
                }
            })
            .collect();
        let rows: Vec<usize> = (0..1000).collect();
        let mut s = StratifiedSampler::new(&rows, &labels, 4, 100);
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let b = s.next(&mut rng);
        let count = |k: usize| b.iter().filter(|&&r| labels[r] == k).count();
        assert_eq!((count(0), count(1), count(2), count(3)), (90, 9, 1, 0));
        // One pass of class 2 (10 rows, quota 1) visits each of its rows once.
        let mut seen: Vec<usize> =
            (0..10).flat_map(|_| s.next(&mut rng)).filter(|&r| labels[r] == 2).collect();
        seen.sort_unstable();
        seen.dedup();
        assert!(seen.len() >= 9, "{seen:?}");
        let draw = |seed| {
            let mut s = StratifiedSampler::new(&rows, &labels, 4, 100);
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            (0..5).map(|_| s.next(&mut rng)).collect::<Vec<_>>()
        };
        assert_eq!(draw(1), draw(1));
        assert_ne!(draw(1), draw(2));
    }
}
