//! The one training loop (paper, Algorithm 1): pre-train on the source with cross-entropy, then
//! adapt. Every method runs through here and only through the `methods::Method` trait; a method
//! only changes the terms it adds. The stages, one file each:
//!
//! | stage | file |
//! |---|---|
//! | checks, hold-out split, row layout `[source train; hold-out; target]` | `layout` |
//! | pre-training, and its cache for grids | `pretrain` |
//! | the label-shift tracker (BBSE-QP, floor, fixed support) | `shift` |
//! | one adaptation step (forward, pseudo-labels, the method's term, CE weights, backward, AdamW) | `adapt` |
//! | the same step on sampled mini-batches with annealed SGD (the baselines' papers) | `minibatch` |
//! | mini-batch pre-training and MUL/`source` adaptation with a memory bank (`training`) | `minibatch_pretrain`, `bank`, `chunked` |
//! | label-free stopping rules of both stages | `converge` |
//! | NaN/Inf and memory guards | `guard` |
//! | the network and its AdamW in full-batch training, on the CPU or the GPU (a failing GPU redoes the stage on the CPU) | `crate::device::training` |
//!
//! `fit` = [`pretrain`] then [`adapt`]; [`fit_with_cache`] shares pre-training across the fits
//! of a grid. Target labels are not an input of this module.

mod adapt;
mod adapt_loop;
mod bank;
mod chunked;
mod converge;
mod guard;
mod layout;
mod minibatch;
mod minibatch_pretrain;
mod pretrain;
mod pretrain_full;
pub(crate) mod records;
mod shift;
#[cfg(test)]
mod tests;

use crate::config::FitConfig;
pub use crate::methods::TransferRecord;
use crate::prior_policy::{
    self, AdaptationCheck, CheckParams, DisagreementResponse, GuardFallback, PriorGuard,
};
use crate::{Error, Result};
pub use adapt::{pseudo_labels, source_cross_entropy};
pub use guard::{
    check_memory_of, memory_estimate_bytes, minibatch_memory_estimate_bytes,
    minibatch_memory_estimate_bytes_of,
};
use layout::Layout;
pub use minibatch::Sampler;
pub use pretrain::{PretrainCache, Pretrained};
use pretrain::{PretrainKey, PretrainState};
pub use records::{FitData, Fitted, HoldoutRecord, IterRecord, Progress, Stage};

/// Pre-training, full-batch or by mini-batch as the layout says (rows borrowed: mini-batch),
/// on the scope's GPU where it pays (`pretrain_full::run_pretraining`).
fn run_pretraining(
    layout: &Layout,
    cfg: &FitConfig,
    total: usize,
    progress: &mut dyn FnMut(Progress),
) -> Result<PretrainState> {
    pretrain_full::run_pretraining(layout, cfg, total, progress)
}

/// The checks of a fit before anything is allocated: the settings ([`FitConfig::validate`]) and
/// the memory estimate for `data`'s shape ([`check_memory_of`]). The public entry points below
/// run it; `CheckedParams` runs the same two checks (at `check()` and before preprocessing) and
/// enters through [`fit_checked`], so each runs once per fit.
fn check_fit(data: &FitData, cfg: &FitConfig) -> Result<()> {
    cfg.validate()?;
    let (n_rows, d) = (data.source_x.nrows() + data.target_x.nrows(), data.source_x.ncols());
    let in_memory = data.source_x.memory().is_some() && data.target_x.memory().is_some();
    check_memory_of(n_rows, d, data.n_classes, cfg, in_memory)
}

/// Pre-training alone (Algorithm 1, first stage): the checks of [`fit`], the hold-out split,
/// and cross-entropy on the source training rows with early stopping on the hold-out. Reads
/// neither the method nor the target rows' values beyond their shape.
pub fn pretrain(
    data: &FitData,
    cfg: &FitConfig,
    progress: &mut dyn FnMut(Progress),
) -> Result<Pretrained> {
    check_fit(data, cfg)?;
    let (pre, _) = crate::device::scoped_with(cfg.device, cfg.device_options(), || {
        let layout = Layout::new(data, cfg)?;
        let state = run_pretraining(&layout, cfg, cfg.pretrain_iters, progress)?;
        Ok(Pretrained { key: PretrainKey::new(cfg, &layout)?, state })
    })?;
    Ok(pre)
}

/// Adaptation (Algorithm 1, second stage) of `cfg.method` from a pre-trained state, which must
/// come from [`pretrain`] on the same source rows and pre-training settings (an error names
/// the mismatch otherwise). `pretrain` then `adapt` gives [`fit`]'s result bit for bit.
pub fn adapt(
    pre: &Pretrained,
    data: &FitData,
    cfg: &FitConfig,
    progress: &mut dyn FnMut(Progress),
) -> Result<Fitted> {
    check_fit(data, cfg)?;
    on_device(cfg, || adapt_here(pre, data, cfg, progress))
}

/// Runs a fit on `cfg.device` and records where it ran.
fn on_device(cfg: &FitConfig, fit: impl FnOnce() -> Result<Fitted>) -> Result<Fitted> {
    let (mut fitted, used) = crate::device::scoped_with(cfg.device, cfg.device_options(), fit)?;
    fitted.device = used;
    Ok(fitted)
}

fn adapt_here(
    pre: &Pretrained,
    data: &FitData,
    cfg: &FitConfig,
    progress: &mut dyn FnMut(Progress),
) -> Result<Fitted> {
    let layout = Layout::new(data, cfg)?;
    if PretrainKey::new(cfg, &layout)? != pre.key {
        return Err(Error::param(
            "pretrained",
            "given state",
            "was pre-trained on other source rows, hold-out or pre-training settings (seed, network, optimizer, pretrain_iters, pretrain_patience, pretrain_min_gain_se)",
        ));
    }
    adapt_checked(data, &layout, pre.state.clone(), cfg, false, progress)
}

/// Trains `cfg.method` on the data. Deterministic for a given seed.
pub fn fit(data: &FitData, cfg: &FitConfig, progress: &mut dyn FnMut(Progress)) -> Result<Fitted> {
    fit_with_cache(data, cfg, None, progress)
}

/// [`fit`], taking the pre-trained state from `cache` when a fit with the same source rows and
/// pre-training settings stored it there (and storing it otherwise). The result is identical,
/// bit for bit, to [`fit`]'s; only the work is shared.
pub fn fit_with_cache(
    data: &FitData,
    cfg: &FitConfig,
    cache: Option<&mut PretrainCache>,
    progress: &mut dyn FnMut(Progress),
) -> Result<Fitted> {
    check_fit(data, cfg)?;
    fit_checked(data, cfg, cache, progress)
}

/// [`fit_with_cache`] for a caller that has run [`check_fit`]'s checks itself (`CheckedParams`).
pub(crate) fn fit_checked(
    data: &FitData,
    cfg: &FitConfig,
    cache: Option<&mut PretrainCache>,
    progress: &mut dyn FnMut(Progress),
) -> Result<Fitted> {
    on_device(cfg, || fit_here(data, cfg, cache, progress))
}

fn fit_here(
    data: &FitData,
    cfg: &FitConfig,
    cache: Option<&mut PretrainCache>,
    progress: &mut dyn FnMut(Progress),
) -> Result<Fitted> {
    let layout = Layout::new(data, cfg)?;
    let total = cfg.pretrain_iters + minibatch::adapt_iterations(cfg);
    let (state, reused) = match cache {
        None => (run_pretraining(&layout, cfg, total, progress)?, false),
        Some(cache) => {
            let key = PretrainKey::new(cfg, &layout)?;
            match cache.get(&key) {
                Some(pre) => (pre.state, true),
                None => {
                    let state = run_pretraining(&layout, cfg, total, progress)?;
                    cache.insert(Pretrained { key, state: state.clone() });
                    (state, false)
                }
            }
        }
    };
    adapt_checked(data, &layout, state, cfg, reused, progress)
}

/// The adaptation stage from `state`, with the adaptation check where the prior guard
/// distrusts the pre-trained network's estimate and its fallback is `adapt-checked`
/// (`prior_policy::adaptation_check`): the stage adapts without correction (w ≡ 1); if the
/// final network fails the check, the stage is redone from `state` as `source`. A trusted
/// estimate, or another fallback, runs the stage once, as without the check.
fn adapt_checked(
    data: &FitData,
    layout: &Layout,
    state: PretrainState,
    cfg: &FitConfig,
    reused: bool,
    progress: &mut dyn FnMut(Progress),
) -> Result<Fitted> {
    let guard = &cfg.label_shift.guard;
    if !(guard.enabled && guard.fallback == GuardFallback::AdaptChecked) {
        return adapt_loop::run_adaptation(data, layout, state, cfg, reused, progress);
    }
    let mut fitted =
        adapt_loop::run_adaptation(data, layout, state.clone(), cfg, reused, progress)?;
    let Some(verdict) = fitted.prior_guard.as_ref() else { return Ok(fitted) };
    if !verdict.checks_adaptation(guard.fallback, guard.on_disagreement) {
        return Ok(fitted);
    }
    let check = check_adapted(&fitted, verdict, data.source_y, cfg)?;
    if check.kept {
        fitted.adaptation_check = Some(check);
        return Ok(fitted);
    }
    let mut as_source = cfg.clone();
    as_source.label_shift.guard.fallback = GuardFallback::Source;
    as_source.label_shift.guard.on_disagreement = DisagreementResponse::Fallback;
    let mut redone = adapt_loop::run_adaptation(data, layout, state, &as_source, reused, progress)?;
    redone.adaptation_check = Some(check);
    Ok(redone)
}

/// The adaptation check of `fitted` against the guard's `verdict` on the pre-trained network;
/// without a hold-out (the guard then read the training rows) the check cannot be made and
/// fails, so the fit adapts as `source`.
fn check_adapted(
    fitted: &Fitted,
    verdict: &PriorGuard,
    source_y: &[usize],
    cfg: &FitConfig,
) -> Result<AdaptationCheck> {
    let labels = fitted.holdout_labels(source_y);
    let params = CheckParams {
        tau: cfg.mul.tau,
        soft: cfg.label_shift.soft,
        calibrate: cfg.label_shift.calibrate,
        min_share: cfg.label_shift.guard.min_confident_share,
    };
    if labels.is_empty() {
        return Ok(AdaptationCheck::not_made(verdict));
    }
    prior_policy::adaptation_check(
        verdict,
        fitted.holdout_probs.view(),
        &labels,
        fitted.target_probs.view(),
        &fitted.source_prior,
        &params,
    )
}
