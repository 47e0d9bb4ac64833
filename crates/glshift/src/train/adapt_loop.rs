//! The adaptation loop: which iteration runs (full-batch, the papers' mini-batch sampler, or
//! mini-batch with the memory bank), the progress callback and the label-free stop. The
//! iterations themselves are `adapt` (full-batch), `minibatch` and `bank`.

use super::adapt::{Adaptation, Trainer};
use super::bank::{view_units, Bank};
use super::converge::AdaptStopper;
use super::guard::device_error;
use super::layout::Layout;
use super::minibatch::{self, Batches};
use super::pretrain::PretrainState;
use super::records::{FitData, Fitted, Progress, Stage};
use super::shift::ShiftTracker;
use crate::config::{build_method, FitConfig};
use crate::device::training::{gpu_net_maker, HostNet, TrainingNet};
use crate::methods::method::Method;
use crate::nn::{Adam, Network, Sgd};
use crate::{Error, Result};

/// How the adaptation iterates, with the state that way needs.
#[allow(clippy::large_enum_variant)] // one per adaptation, never moved in a loop
enum Schedule {
    /// Every row in every iteration (AdamW).
    Full,
    /// The papers' mini-batch baselines: sampled rows, annealed SGD, cached full views.
    Batches(Batches),
    /// MUL's family and `source` by mini-batch: the memory bank (`super::bank`).
    Bank(Bank),
}

/// Runs the adaptation iterations after `state` and returns the fit. AdamW adaptation
/// (full-batch, or by mini-batch with the bank) runs on the scope's GPU where it pays
/// (`device::training`); if the GPU fails, the adaptation is redone on the CPU from `state`
/// (and the report says so).
pub(super) fn run_adaptation(
    data: &FitData,
    layout: &Layout,
    state: PretrainState,
    cfg: &FitConfig,
    pretraining_reused: bool,
    progress: &mut dyn FnMut(Progress),
) -> Result<Fitted> {
    // AdamW schedules (full-batch, or the bank's batches) train through `TrainingNet`.
    let rows = layout.rows_per_step(cfg, layout.n_rows());
    let device = gpu_net_maker(rows, layout.d, cfg.network.hidden[0])
        .filter(|_| !cfg.baselines.minibatch(cfg.method));
    adapt_with_fallback(data, layout, state, cfg, pretraining_reused, progress, device)
}

/// [`run_adaptation`] with AdamW training (full-batch or the bank's) on the network `device`
/// makes (the GPU's), or on the CPU. If the device fails, the adaptation is redone on the CPU from `state` (the same
/// result as a CPU fit, bit for bit) and the failure is recorded for the report.
pub(super) fn adapt_with_fallback<N: TrainingNet + 'static>(
    data: &FitData,
    layout: &Layout,
    state: PretrainState,
    cfg: &FitConfig,
    pretraining_reused: bool,
    progress: &mut dyn FnMut(Progress),
    device: Option<impl FnOnce(Network, Adam) -> std::result::Result<N, String>>,
) -> Result<Fitted> {
    if let Some(make) = device {
        let make = |net, adam| make(net, adam).map(|n| Box::new(n) as Box<dyn TrainingNet>);
        match adapt_on(data, layout, state.clone(), cfg, pretraining_reused, progress, Some(make)) {
            Err(Error::Device { reason, .. }) => {
                crate::device::record_failure(format!("adaptation on the GPU: {reason}"))
            }
            done => return done,
        }
    }
    adapt_on(
        data,
        layout,
        state,
        cfg,
        pretraining_reused,
        progress,
        None::<fn(Network, Adam) -> std::result::Result<Box<dyn TrainingNet>, String>>,
    )
}

/// Gives a method that reads the input features (KMM) the source training rows and the target
/// rows, from the full-batch layout; a fit whose rows are borrowed (mini-batch) has no such
/// copy, so that is an error naming the setting.
fn hand_features(method: &mut dyn Method, layout: &Layout, cfg: &FitConfig) -> Result<()> {
    if layout.is_borrowed() {
        return Err(Error::param(
            "training",
            "mini-batch",
            format!(
                "{} reads every source and target row at once: train it full-batch",
                cfg.method
            ),
        ));
    }
    method.set_features(layout.x_train(), layout.x_target())
}

/// The adaptation, full-batch on the network `device` makes or on the CPU's.
fn adapt_on(
    data: &FitData,
    layout: &Layout,
    state: PretrainState,
    cfg: &FitConfig,
    pretraining_reused: bool,
    progress: &mut dyn FnMut(Progress),
    device: Option<impl FnOnce(Network, Adam) -> std::result::Result<Box<dyn TrainingNet>, String>>,
) -> Result<Fitted> {
    let PretrainState { net, adam, rng, mut history } = state;
    let iters = minibatch::adapt_iterations(cfg);
    history.reserve(iters);
    let pretrain_done = history.len();
    let total = pretrain_done + iters;
    let mut method = build_method(cfg, net.z_dim(), layout.c)?;
    if method.reads_features() {
        hand_features(method.as_mut(), layout, cfg)?;
    }
    let tracker = ShiftTracker::new(cfg, layout.c);
    let b = &cfg.baselines;
    let (trainer, mut schedule) = if b.minibatch(cfg.method) {
        let sgd = Sgd::new(&net, b.lr, b.momentum, b.nesterov, b.weight_decay);
        (Trainer::Sgd(net, sgd), Schedule::Batches(Batches::new(layout, cfg)))
    } else {
        let full: Box<dyn TrainingNet> = match device {
            Some(make) => make(net, adam).map_err(device_error)?,
            None => Box::new(HostNet::new(net, adam)),
        };
        let schedule = if layout.is_borrowed() {
            Schedule::Bank(Bank::new(layout, cfg))
        } else {
            Schedule::Full
        };
        (Trainer::AdamW(full), schedule)
    };
    let stopper = if matches!(schedule, Schedule::Bank(_)) {
        AdaptStopper::new(&view_units(cfg))
    } else {
        AdaptStopper::new(cfg)
    };
    let mut a =
        Adaptation { layout, cfg, method, tracker, trainer, rng, stopper, converged: false };
    for it in 0..iters {
        let record = match &mut schedule {
            Schedule::Bank(bank) => a.bank_step(bank, it, pretrain_done + it)?,
            Schedule::Batches(batches) => {
                a.minibatch_step(batches, it, pretrain_done + it, iters)?
            }
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
