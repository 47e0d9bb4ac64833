//! Pre-training by mini-batch (Algorithm 1's first stage when `training` resolves to
//! mini-batch): Adam on the cross-entropy of class-stratified source batches
//! (`minibatch.batch_size` rows, every class in every batch), BatchNorm statistics from the
//! batch. Every `minibatch.eval_every` steps the hold-out is evaluated (chunks, frozen
//! statistics; `chunked`) and the stopping rule of full-batch pre-training observes it, its
//! window W = `pretrain_patience` steps counted in evaluations (⌈W / eval_every⌉); the network
//! with the lowest hold-out NLL is kept. Per-step cost is set by the batch, not by n.

use crate::seeds::{stream_seed, Stream};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use super::chunked::{bn_stats_rows, EvalNet, StratifiedSampler};
use super::converge::PretrainStopper;
use super::guard::{check_finite, device_error, gradient_error};
use super::layout::Layout;
use super::pretrain::{holdout_record, PretrainState};
use super::records::{IterRecord, Progress, Stage};
use crate::config::FitConfig;
use crate::device::training::Snapshots;
use crate::label_shift;
use crate::nn::{weighted_cross_entropy, Forward};
use crate::Result;

/// Mini-batch pre-training on `net` (the CPU's or a device's, `pretrain_full::pretrain_on`);
/// the state has the same meaning as full-batch pre-training's.
pub(super) fn run<N: Snapshots>(
    layout: &Layout,
    cfg: &FitConfig,
    total: usize,
    progress: &mut dyn FnMut(Progress),
    mut net: N,
) -> Result<PretrainState> {
    let mb = &cfg.minibatch;
    let n_train = layout.n_train();
    let mut rng = ChaCha8Rng::seed_from_u64(stream_seed(cfg.seed, Stream::Pretrain));
    let mut batch_rng = ChaCha8Rng::seed_from_u64(stream_seed(cfg.seed, Stream::PretrainBatches));
    let train_rows: Vec<usize> = (0..n_train).collect();
    let mut sampler = StratifiedSampler::new(&train_rows, &layout.y_train, layout.c, mb.batch_size);
    let stats_rows = bn_stats_rows(layout, cfg);
    let mut stopper = PretrainStopper::new(&evaluation_units(cfg));
    let mut history = Vec::with_capacity(cfg.pretrain_iters + cfg.adapt_iters);
    let mut best = None;
    for it in 0..cfg.pretrain_iters {
        let mut holdout = None;
        if layout.n_hold() > 0 && it % mb.eval_every == 0 {
            let host = net.network().map_err(device_error)?;
            let eval = EvalNet::new(&host, layout, &stats_rows, mb.chunk_rows)?;
            let (_, hold_logits) = eval.range(layout, layout.hold_rows())?;
            let rows = label_shift::calibration::nll_rows(hold_logits.view(), &layout.y_hold, 1.0);
            let verdict = stopper.observe(&rows);
            if verdict.improved {
                best = Some(net.snapshot().map_err(device_error)?);
            }
            if verdict.stop {
                break;
            }
            holdout = Some(holdout_record(&rows, hold_logits.view(), &layout.y_hold));
        }
        let idx = sampler.next(&mut batch_rng);
        let y: Vec<usize> = idx.iter().map(|&i| layout.y_train[i]).collect();
        let x = layout.gather(&idx)?;
        net.forward(x.view(), &Forward { train: true, stats_rows: idx.len() }, &mut rng, false)
            .map_err(device_error)?;
        let (ce, d_logits) = weighted_cross_entropy(net.logits(), &y, &vec![1.0f32; y.len()]);
        check_finite("cross-entropy", it, Stage::Pretrain, ce, cfg)?;
        if !net.step(x.view(), d_logits.view(), None).map_err(device_error)? {
            return Err(gradient_error(
                Stage::Pretrain,
                it,
                "the gradient of the cross-entropy",
                cfg,
            ));
        }
        history.push(IterRecord::pretrain(it, ce, holdout));
        progress(Progress { done: it + 1, total, stage: Stage::Pretrain, loss: ce });
    }
    if let Some(s) = best {
        net.restore(s);
    }
    let (net, adam) = Box::new(net).into_host().map_err(device_error)?;
    Ok(PretrainState { net, adam, rng, history })
}

/// The stopping rule's settings counted in hold-out evaluations instead of steps.
fn evaluation_units(cfg: &FitConfig) -> FitConfig {
    let every = cfg.minibatch.eval_every;
    FitConfig {
        pretrain_patience: cfg.pretrain_patience.div_ceil(every),
        pretrain_iters: cfg.pretrain_iters.div_ceil(every),
        ..cfg.clone()
    }
}
