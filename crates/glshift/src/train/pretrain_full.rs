//! Full-batch pre-training (Algorithm 1, first stage, every row in every iteration); the
//! mini-batch twin is `minibatch_pretrain`, the shared state and records are in `pretrain`.
//!
//! Both loops are written once against `device::training::TrainingNet`: inside a GPU scope the
//! network, its optimiser and its activations live on the GPU (only the logits and their
//! gradient cross per iteration); elsewhere, or if the GPU fails (then from the start, and the
//! report says so), the CPU's `Network` and `Adam` run them. [`pretrain_on`] chooses.

use crate::seeds::{stream_seed, Stream};
use ndarray::s;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use super::converge::PretrainStopper;
use super::guard::{check_finite, device_error, gradient_error};
use super::layout::Layout;
use super::pretrain::{holdout_record, PretrainState};
use super::records::{IterRecord, Progress, Stage};
use crate::config::FitConfig;
use crate::device::training::{gpu_net_maker, HostNet, Snapshots};
use crate::label_shift;
use crate::nn::{weighted_cross_entropy, Adam, Forward, Network};
use crate::{Error, Result};

/// Pre-training, full-batch or by mini-batch as the layout says, on the scope's GPU where it
/// pays (a pass of at least `GPU_MIN_MACS` multiply-adds in the first layer), else on the CPU.
/// `total` is the iteration count the progress callback reports against.
pub(super) fn run_pretraining(
    layout: &Layout,
    cfg: &FitConfig,
    total: usize,
    progress: &mut dyn FnMut(Progress),
) -> Result<PretrainState> {
    let device = gpu_net_maker(
        layout.rows_per_step(cfg, layout.n_train() + layout.n_hold()),
        layout.d,
        cfg.network.hidden[0],
    );
    pretrain_on(layout, cfg, total, progress, device)
}

/// [`run_pretraining`] on the network `device` makes of the initial one (the GPU's), or on
/// the CPU's. If the device fails, pre-training is redone on the CPU from the start (the same
/// result as a CPU fit, bit for bit) and the failure is recorded for the report.
pub(super) fn pretrain_on<N: Snapshots>(
    layout: &Layout,
    cfg: &FitConfig,
    total: usize,
    progress: &mut dyn FnMut(Progress),
    device: Option<impl FnOnce(Network, Adam) -> std::result::Result<N, String>>,
) -> Result<PretrainState> {
    let net = Network::new(layout.d, layout.c, &cfg.network, cfg.seed)?;
    let adam = Adam::new(&cfg.optimizer, &net);
    if let Some(make) = device {
        match make(net.clone(), adam.clone())
            .map_err(device_error)
            .and_then(|dev| run_stage(layout, cfg, total, progress, dev))
        {
            Err(Error::Device { reason, .. }) => {
                crate::device::record_failure(format!("pre-training on the GPU: {reason}"))
            }
            done => return done,
        }
    }
    run_stage(layout, cfg, total, progress, HostNet::new(net, adam))
}

/// The full-batch loop, or the mini-batch one (`minibatch_pretrain`) for borrowed rows.
fn run_stage<N: Snapshots>(
    layout: &Layout,
    cfg: &FitConfig,
    total: usize,
    progress: &mut dyn FnMut(Progress),
    net: N,
) -> Result<PretrainState> {
    if layout.is_borrowed() {
        super::minibatch_pretrain::run(layout, cfg, total, progress, net)
    } else {
        run(layout, cfg, total, progress, net)
    }
}

/// Cross-entropy on the source training rows of `x_source = [train; hold-out]`, stopped by the
/// hold-out NLL with `cfg.pretrain_patience` and `cfg.pretrain_min_gain_se` (the rule of
/// `converge`), and the best network by that NLL (with its optimiser state) restored. Without a
/// hold-out it runs `cfg.pretrain_iters` iterations.
fn run<N: Snapshots>(
    layout: &Layout,
    cfg: &FitConfig,
    total: usize,
    progress: &mut dyn FnMut(Progress),
    mut net: N,
) -> Result<PretrainState> {
    let (n_train, n_hold) = (layout.n_train(), layout.n_hold());
    let (x_source, y_train, y_hold) = (layout.x_source(), &layout.y_train, &layout.y_hold);
    let mut rng = ChaCha8Rng::seed_from_u64(stream_seed(cfg.seed, Stream::Pretrain));
    let mut history = Vec::with_capacity(cfg.pretrain_iters + cfg.adapt_iters);
    let uniform = vec![1.0f32; n_train];
    let train_fw = Forward { train: true, stats_rows: n_train };
    let eval_fw = Forward { train: false, stats_rows: n_train };
    let needs_eval_pass = cfg.network.dropout > 0.0;
    let mut stopper = PretrainStopper::new(cfg);
    let mut best = None;
    for it in 0..cfg.pretrain_iters {
        net.forward(x_source, &train_fw, &mut rng, false).map_err(device_error)?;
        let (ce, d_train_logits) =
            weighted_cross_entropy(net.logits().slice(s![..n_train, ..]), y_train, &uniform);
        check_finite("cross-entropy", it, Stage::Pretrain, ce, cfg)?;
        let mut holdout = None;
        if n_hold > 0 {
            let eval_logits = if needs_eval_pass {
                Some(net.logits_of(x_source, &eval_fw, &mut rng).map_err(device_error)?)
            } else {
                None
            };
            let hold_logits = eval_logits
                .as_ref()
                .map_or(net.logits(), |l| l.view())
                .slice_move(s![n_train.., ..]);
            let rows = label_shift::calibration::nll_rows(hold_logits, y_hold, 1.0);
            let verdict = stopper.observe(&rows);
            if verdict.improved {
                best = Some(net.snapshot().map_err(device_error)?);
            }
            if verdict.stop {
                break;
            }
            holdout = Some(holdout_record(&rows, hold_logits, y_hold));
        }
        // Only the training rows (first) carry a gradient; the hold-out rows are skipped.
        if !net.step(x_source, d_train_logits.view(), None).map_err(device_error)? {
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
