//! The adaptation loop: which iteration runs (full-batch, the papers' mini-batch sampler, or
//! mini-batch with the memory bank), the progress callback and the label-free stop. The
//! iterations themselves are `adapt` (full-batch), `minibatch` and `bank`.

use super::adapt::Adaptation;
use super::bank::{view_units, Bank};
use super::converge::AdaptStopper;
use super::layout::Layout;
use super::minibatch::{self, Batches};
use super::pretrain::PretrainState;
use super::records::{FitData, Fitted, Progress, Stage};
use super::shift::ShiftTracker;
use crate::methods::config::{build_method, FitConfig};
use crate::nn::{Optimizer, Sgd};
use crate::Result;

/// How the adaptation iterates, with the state that way needs.
enum Schedule {
    /// Every row in every iteration (AdamW).
    Full,
    /// The papers' mini-batch baselines: sampled rows, annealed SGD, cached full views.
    Batches(Batches),
    /// MUL's family and `source` by mini-batch: the memory bank (`super::bank`).
    Bank(Bank),
}

/// Runs the adaptation iterations after `state` and returns the fit.
pub(super) fn run_adaptation(
    data: &FitData,
    layout: &Layout,
    state: PretrainState,
    cfg: &FitConfig,
    pretraining_reused: bool,
    progress: &mut dyn FnMut(Progress),
) -> Result<Fitted> {
    let PretrainState { net, adam, rng, mut history } = state;
    let iters = minibatch::adapt_iterations(cfg);
    history.reserve(iters);
    let pretrain_done = history.len();
    let total = pretrain_done + iters;
    let method = build_method(cfg, net.z_dim(), layout.c)?;
    let tracker = ShiftTracker::new(cfg, layout.c);
    let b = &cfg.baselines;
    let (opt, mut schedule) = if b.minibatch(cfg.method) {
        let sgd = Sgd::new(&net, b.lr, b.momentum, b.nesterov, b.weight_decay);
        (Optimizer::Sgd(sgd), Schedule::Batches(Batches::new(layout, cfg)))
    } else if layout.is_borrowed() {
        (Optimizer::Adam(adam), Schedule::Bank(Bank::new(layout, cfg)))
    } else {
        (Optimizer::Adam(adam), Schedule::Full)
    };
    let stopper = if matches!(schedule, Schedule::Bank(_)) { AdaptStopper::new(&view_units(cfg)) } else { AdaptStopper::new(cfg) };
    let mut a = Adaptation { layout, cfg, method, tracker, net, opt, rng, stopper, converged: false };
    for it in 0..iters {
        let record = match &mut schedule {
            Schedule::Bank(bank) => a.bank_step(bank, it, pretrain_done + it)?,
            Schedule::Batches(batches) => a.minibatch_step(batches, it, pretrain_done + it, iters)?,
            Schedule::Full => a.step(it, pretrain_done + it)?,
        };
        let loss = record.total;
        history.push(record);
        // A converged fit reports its bar as complete.
        let done = if a.converged { total } else { pretrain_done + it + 1 };
        progress(Progress { done, total, stage: Stage::Adapt, loss });
        if a.converged {
            break;
        }
    }
    a.finish(data, history, pretraining_reused)
}
