//! Pre-training (Algorithm 1, first stage) and the cache that shares it across the fits of a
//! grid. Pre-training reads only the source rows (in training order) and the settings of
//! [`PretrainKey`]; not the method, the adaptation settings or the target.

use ndarray::{s, ArrayView2};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use super::converge::{mean_and_se, PretrainStopper};
use super::guard::{check_finite, gradient_error};
use super::layout::Layout;
use super::{HoldoutRecord, IterRecord, Progress, Stage};
use crate::label_shift;
use crate::methods::config::FitConfig;
use crate::nn::{argmax_row, weighted_cross_entropy, Adam, Forward, Network, Pass};
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
            layout.chunk(start..(start + chunk).min(n))?.iter().for_each(|v| v.to_bits().hash(&mut h));
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

/// Cross-entropy on the source training rows of `x_source = [train; hold-out]`, stopped by the
/// hold-out NLL with `cfg.pretrain_patience` and `cfg.pretrain_min_gain_se` (the rule of
/// `converge`), and the best network by that NLL (with its optimiser state) restored. Without a
/// hold-out it runs `cfg.pretrain_iters` iterations. `total` is the iteration count the progress callback reports against.
pub(super) fn run_pretraining(
    layout: &Layout,
    cfg: &FitConfig,
    total: usize,
    progress: &mut dyn FnMut(Progress),
) -> Result<PretrainState> {
    if layout.is_borrowed() {
        return super::minibatch_pretrain::run_pretraining_minibatch(layout, cfg, total, progress);
    }
    let (n_train, n_hold) = (layout.n_train(), layout.n_hold());
    let (x_source, y_train, y_hold) = (layout.x_source(), &layout.y_train, &layout.y_hold);
    let mut net = Network::new(layout.d, layout.c, &cfg.network, cfg.seed)?;
    let mut adam = Adam::new(&cfg.optimizer, &net);
    let mut rng = ChaCha8Rng::seed_from_u64(cfg.seed ^ 0x9e37_79b9_7f4a_7c15);
    let mut history = Vec::with_capacity(cfg.pretrain_iters + cfg.adapt_iters);
    let uniform = vec![1.0f32; n_train];
    let train_fw = Forward { train: true, stats_rows: n_train };
    let eval_fw = Forward { train: false, stats_rows: n_train };
    let needs_eval_pass = cfg.network.dropout > 0.0;
    let mut stopper = PretrainStopper::new(cfg);
    let mut best: Option<(Network, Adam)> = None;
    for it in 0..cfg.pretrain_iters {
        let pass = net.forward(x_source, &train_fw, &mut rng);
        let (ce, d_train_logits, _) = weighted_cross_entropy(pass.logits.slice(s![..n_train, ..]), y_train, &uniform);
        check_finite("cross-entropy", it, Stage::Pretrain, ce, cfg)?;
        let mut holdout = None;
        if n_hold > 0 {
            let logits = if needs_eval_pass { net.forward(x_source, &eval_fw, &mut rng).logits } else { pass.logits.clone() };
            let hold_logits = logits.slice(s![n_train.., ..]);
            let rows = label_shift::calibration::nll_rows(hold_logits, y_hold, 1.0);
            let verdict = stopper.observe(&rows);
            if verdict.improved {
                best = Some((net.clone(), adam.clone()));
            }
            if verdict.stop {
                break;
            }
            holdout = Some(holdout_record(&rows, hold_logits, y_hold));
        }
        // Only the training rows (first) carry a gradient; the hold-out rows are skipped.
        cross_entropy_step(&mut net, &mut adam, &pass, d_train_logits.view(), it, cfg)?;
        history.push(IterRecord::pretrain(it, ce, holdout));
        progress(Progress { done: it + 1, total, stage: Stage::Pretrain, loss: ce });
    }
    Ok(PretrainState::with_best(net, adam, rng, history, best))
}

/// Backward of the cross-entropy's gradient on the leading rows of `pass`, then one Adam step.
pub(super) fn cross_entropy_step(net: &mut Network, adam: &mut Adam, pass: &Pass, d_logits: ArrayView2<f32>, it: usize, cfg: &FitConfig) -> Result<()> {
    let grads = net.backward_leading(pass, d_logits);
    if !grads.is_finite() {
        return Err(gradient_error(Stage::Pretrain, it, "the gradient of the cross-entropy", cfg));
    }
    adam.step(net, &grads);
    Ok(())
}

impl PretrainState {
    /// The state at the end of pre-training: the best network by hold-out NLL (with its
    /// optimiser state) when the rule kept one, else the last.
    pub(super) fn with_best(net: Network, adam: Adam, rng: ChaCha8Rng, history: Vec<IterRecord>, best: Option<(Network, Adam)>) -> Self {
        let (net, adam) = best.unwrap_or((net, adam));
        PretrainState { net, adam, rng, history }
    }
}

/// The hold-out's record for the history: mean NLL and its standard error (the stopping rule's
/// inputs) and the accuracy.
pub(super) fn holdout_record(nll_rows: &[f64], logits: ArrayView2<f32>, labels: &[usize]) -> HoldoutRecord {
    let (nll, nll_se) = mean_and_se(nll_rows);
    let hits = logits.rows().into_iter().zip(labels).filter(|(row, &y)| argmax_row(*row).0 == y).count();
    HoldoutRecord { nll, nll_se, accuracy: hits as f64 / labels.len().max(1) as f64 }
}
