//! Pre-training (Algorithm 1, first stage) and the cache that shares it across the fits of a
//! grid. Pre-training reads only the source rows (in training order) and the settings of
//! [`PretrainKey`]; not the method, the adaptation settings or the target.

use ndarray::ArrayView2;
use rand_chacha::ChaCha8Rng;

use super::converge::mean_and_se;
use super::layout::Layout;
use super::records::{HoldoutRecord, IterRecord};
use crate::config::FitConfig;
use crate::nn::{argmax_row, Adam, Network};
use crate::Result;

/// Network, optimiser and random-stream state at the end of pre-training, with its records.
#[derive(Clone)]
pub(super) struct PretrainState {
    pub net: Network,
    pub adam: Adam,
    pub rng: ChaCha8Rng,
    pub history: Vec<IterRecord>,
}

/// Everything pre-training reads: the settings below and the source rows in training order
/// (`[train; hold-out]`, so the split is part of it) with their labels. A setting added to
/// pre-training must be added here.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct PretrainKey {
    settings: String,
    shape: (usize, usize, usize),
    fingerprint: u64,
}

impl PretrainKey {
    /// Errors: a file the rows are read from could not be read, or changed.
    pub fn new(cfg: &FitConfig, layout: &Layout) -> Result<Self> {
        use std::hash::{Hash, Hasher};
        let settings = serde_json::json!({
            "seed": cfg.seed,
            "network": cfg.network,
            "optimizer": cfg.optimizer,
            "pretrain_iters": cfg.pretrain_iters,
            "pretrain_patience": cfg.pretrain_patience,
            "pretrain_min_gain_se": cfg.pretrain_min_gain_se,
            "minibatch": layout.is_borrowed().then_some(&cfg.minibatch),
        })
        .to_string();
        // Exact bits, not values: equal keys must mean identical inputs.
        let mut h = std::collections::hash_map::DefaultHasher::new();
        let n = layout.target_offset();
        let chunk = cfg.minibatch.chunk_rows.max(1);
        for start in (0..n).step_by(chunk) {
            layout
                .chunk(start..(start + chunk).min(n))?
                .iter()
                .for_each(|v| v.to_bits().hash(&mut h));
        }
        layout.y_train.hash(&mut h);
        layout.y_hold.hash(&mut h);
        let d = layout.d;
        Ok(PretrainKey { settings, shape: (n, d, layout.n_train()), fingerprint: h.finish() })
    }
}

/// A pre-trained network (with its optimiser and random-stream state and the pre-training
/// history), the input of [`super::adapt`]. Made by [`super::pretrain`].
#[derive(Clone)]
pub struct Pretrained {
    pub(super) key: PretrainKey,
    pub(super) state: PretrainState,
}

impl Pretrained {
    /// The network at the end of pre-training (the best one by the hold-out NLL).
    pub fn network(&self) -> &Network {
        &self.state.net
    }

    /// The pre-training iterations' records.
    pub fn history(&self) -> &[IterRecord] {
        &self.state.history
    }
}

/// Pre-trained states shared by the fits of a grid (`glshift bench`: every method of one task
/// and seed pre-trains the same network on the same rows). A fit whose key matches reuses the
/// state; results are unchanged.
#[derive(Default)]
pub struct PretrainCache {
    entries: Vec<Pretrained>,
    hits: usize,
}

impl PretrainCache {
    pub fn new() -> Self {
        Self::default()
    }

    /// How many fits reused a stored state.
    pub fn hits(&self) -> usize {
        self.hits
    }

    /// How many states are stored.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub(super) fn get(&mut self, key: &PretrainKey) -> Option<Pretrained> {
        let found = self.entries.iter().find(|p| &p.key == key).cloned();
        self.hits += usize::from(found.is_some());
        found
    }

    pub(super) fn insert(&mut self, pre: Pretrained) {
        self.entries.push(pre);
    }
}

/// The hold-out's record for the history: mean NLL and its standard error (the stopping rule's
/// inputs) and the accuracy.
pub(super) fn holdout_record(
    nll_rows: &[f64],
    logits: ArrayView2<f32>,
    labels: &[usize],
) -> HoldoutRecord {
    let (nll, nll_se) = mean_and_se(nll_rows);
    let hits =
        logits.rows().into_iter().zip(labels).filter(|(row, &y)| argmax_row(*row).0 == y).count();
    HoldoutRecord { nll, nll_se, accuracy: hits as f64 / labels.len().max(1) as f64 }
}
