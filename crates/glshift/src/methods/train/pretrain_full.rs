//! Full-batch pre-training (Algorithm 1, first stage, every row in every iteration); the
//! mini-batch twin is `minibatch_pretrain`, the shared state and records are in `pretrain`.

use crate::seeds::{stream_seed, Stream};
use ndarray::s;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use super::converge::PretrainStopper;
use super::guard::check_finite;
use super::layout::Layout;
use super::pretrain::{cross_entropy_step, holdout_record, PretrainState};
use super::records::{IterRecord, Progress, Stage};
use crate::label_shift;
use crate::methods::config::FitConfig;
use crate::nn::{weighted_cross_entropy, Adam, Forward, Network};
use crate::Result;

/// Cross-entropy on the source training rows of `x_source = [train; hold-out]`, stopped by the
/// hold-out NLL with `cfg.pretrain_patience` and `cfg.pretrain_min_gain_se` (the rule of
/// `converge`), and the best network by that NLL (with its optimiser state) restored. Without a
/// hold-out it runs `cfg.pretrain_iters` iterations. `total` is the iteration count the progress callback reports against.
pub(super) fn run_pretraining_full(
    layout: &Layout,
    cfg: &FitConfig,
    total: usize,
    progress: &mut dyn FnMut(Progress),
) -> Result<PretrainState> {
    let (n_train, n_hold) = (layout.n_train(), layout.n_hold());
    let (x_source, y_train, y_hold) = (layout.x_source(), &layout.y_train, &layout.y_hold);
    let mut net = Network::new(layout.d, layout.c, &cfg.network, cfg.seed)?;
    let mut adam = Adam::new(&cfg.optimizer, &net);
    let mut rng = ChaCha8Rng::seed_from_u64(stream_seed(cfg.seed, Stream::Pretrain));
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
