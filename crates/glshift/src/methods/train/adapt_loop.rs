//! The adaptation loop: which iteration runs (full-batch, the papers' mini-batch sampler, or
//! mini-batch with the memory bank), the progress callback and the label-free stop. The
//! iterations themselves are `adapt` (full-batch), `minibatch` and `bank`.

use std::sync::Arc;

use super::adapt::{device_error, Adaptation};
use super::bank::{view_units, Bank};
use super::converge::AdaptStopper;
use super::layout::Layout;
use super::minibatch::{self, Batches};
use super::pretrain::PretrainState;
use super::records::{FitData, Fitted, Progress, Stage};
use super::shift::ShiftTracker;
use crate::methods::config::{build_method, FitConfig};
use crate::nn::{Optimizer, Sgd};
use crate::device::training::{gpu_for_training, upload, HostNet, TrainingNet};
use crate::device::Gpu;
use crate::{Error, Result};

/// How the adaptation iterates, with the state that way needs.
enum Schedule {
    /// Every row in every iteration (AdamW).
    Full,
    /// The papers' mini-batch baselines: sampled rows, annealed SGD, cached full views.
    Batches(Batches),
    /// MUL's family and `source` by mini-batch: the memory bank (`super::bank`).
    Bank(Bank),
}

/// Runs the adaptation iterations after `state` and returns the fit. Full-batch AdamW runs on
/// the scope's GPU where there is one (`device::training`); if the GPU fails, the adaptation
/// is redone on the CPU from `state` (and the report says so).
pub(super) fn run_adaptation(
    data: &FitData,
    layout: &Layout,
    state: PretrainState,
    cfg: &FitConfig,
    pretraining_reused: bool,
    progress: &mut dyn FnMut(Progress),
) -> Result<Fitted> {
    let full_batch = !cfg.baselines.minibatch(cfg.method) && !layout.is_borrowed();
    if let Some(gpu) = gpu_for_training(layout.x_all.view(), cfg.network.hidden[0]).filter(|_| full_batch) {
        match adapt_on(data, layout, state.clone(), cfg, pretraining_reused, progress, Some(gpu)) {
            Err(Error::Device { reason, .. }) => crate::device::record_failure(format!("adaptation on the GPU: {reason}")),
            done => return done,
        }
    }
    adapt_on(data, layout, state, cfg, pretraining_reused, progress, None)
}

/// [`run_adaptation`] with full-batch training on `gpu`, or on the CPU.
fn adapt_on(
    data: &FitData,
    layout: &Layout,
    state: PretrainState,
    cfg: &FitConfig,
    pretraining_reused: bool,
    progress: &mut dyn FnMut(Progress),
    gpu: Option<Arc<Gpu>>,
) -> Result<Fitted> {
    let PretrainState { net, adam, rng, mut history } = state;
    let iters = minibatch::adapt_iterations(cfg);
    history.reserve(iters);
    let pretrain_done = history.len();
    let total = pretrain_done + iters;
    let method = build_method(cfg, net.z_dim(), layout.c)?;
    let tracker = ShiftTracker::new(cfg, layout.c);
    let b = &cfg.baselines;
    let (opt, mut schedule, full) = if b.minibatch(cfg.method) {
        let sgd = Sgd::new(&net, b.lr, b.momentum, b.nesterov, b.weight_decay);
        (Optimizer::Sgd(sgd), Schedule::Batches(Batches::new(layout, cfg)), None)
    } else if layout.is_borrowed() {
        (Optimizer::Adam(adam), Schedule::Bank(Bank::new(layout, cfg)), None)
    } else {
        // `net` and `opt` stay behind, stale, until `finish` takes the trained ones back.
        let full: Box<dyn TrainingNet> = match gpu {
            Some(gpu) => Box::new(upload(gpu, net.clone(), adam.clone()).map_err(device_error)?),
            None => Box::new(HostNet::new(net.clone(), adam.clone())),
        };
        (Optimizer::Adam(adam), Schedule::Full, Some(full))
    };
    let stopper = if matches!(schedule, Schedule::Bank(_)) { AdaptStopper::new(&view_units(cfg)) } else { AdaptStopper::new(cfg) };
    let mut a = Adaptation { layout, cfg, method, tracker, net, opt, full, rng, stopper, converged: false };
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
