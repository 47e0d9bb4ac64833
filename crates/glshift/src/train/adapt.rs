//! The adaptation stage (Algorithm 1, second stage): the same iteration for every method —
//! forward, label-shift estimate, pseudo-labels, the method's term (through [`Method`] only),
//! the weighted source cross-entropy, backward through G and F, an optimiser step. The hold-out
//! rows and the target rows never receive a cross-entropy gradient; target labels are not an
//! input. Full batch with AdamW here; the baselines whose papers train by mini-batch SGD take
//! the same iteration on sampled rows (`super::minibatch`, `BaselineConfig::minibatch`).

use ndarray::{s, Array2, ArrayView2};
use rand_chacha::ChaCha8Rng;

use super::chunked::EvalNet;
use super::converge::{AdaptState, AdaptStopper};
use super::guard::device_error;
use super::guard::{check_finite, gradient_error};
use super::layout::Layout;
use super::records::{FitData, Fitted, IterRecord, Stage};
use super::shift::ShiftTracker;
use crate::config::FitConfig;
use crate::device::training::TrainingNet;
use crate::label_shift::{self, ShiftEstimate};
use crate::methods::method::{AdaptInputs, Method, StepOutput};
use crate::nn::{softmax, Forward, Network, Pass, Sgd};
use crate::{Error, Result};

mod losses;
use losses::{logit_gradients, z_gradients};
pub use losses::{pseudo_labels, source_cross_entropy};

/// The state the adaptation iterations share.
pub(super) struct Adaptation<'a, 'd> {
    pub layout: &'a Layout<'d>,
    pub cfg: &'a FitConfig,
    pub method: Box<dyn Method>,
    pub tracker: ShiftTracker,
    /// The network and how it trains.
    pub trainer: Trainer,
    pub rng: ChaCha8Rng,
    /// The label-free stopping rule (`None`: run all the iterations).
    pub stopper: Option<AdaptStopper>,
    /// Set by the iteration after which the rule says the adaptation has settled.
    pub converged: bool,
}

/// The calibrated evaluation-mode probabilities of every row at one iteration (the
/// training-mode pass itself is kept by `full` for the backward).
struct Observation {
    temperature: f64,
    probs: Array2<f32>,
}

/// How the adaptation trains the network: the baselines' SGD schedule (`super::minibatch`)
/// steps the CPU's `Network` itself (SGD from zero momentum); the AdamW schedules (full-batch,
/// and by mini-batch with the memory bank) go through [`TrainingNet`], on the CPU or the GPU
/// (`device::training`), AdamW continued from pre-training.
#[allow(clippy::large_enum_variant)] // one per adaptation, never moved in a loop
pub(super) enum Trainer {
    Sgd(Network, Sgd),
    AdamW(Box<dyn TrainingNet>),
}

impl Trainer {
    /// The AdamW schedules' network.
    pub(super) fn adamw(&self) -> &dyn TrainingNet {
        match self {
            Trainer::AdamW(full) => full.as_ref(),
            Trainer::Sgd(..) => unreachable!("the SGD schedule does not train through TrainingNet"),
        }
    }

    /// [`Trainer::adamw`], mutable.
    pub(super) fn adamw_mut(&mut self) -> &mut dyn TrainingNet {
        match self {
            Trainer::AdamW(full) => full.as_mut(),
            Trainer::Sgd(..) => unreachable!("the SGD schedule does not train through TrainingNet"),
        }
    }

    /// The SGD schedule's network and optimiser.
    pub(super) fn sgd(&mut self) -> (&mut Network, &mut Sgd) {
        match self {
            Trainer::Sgd(net, sgd) => (net, sgd),
            Trainer::AdamW(_) => unreachable!("AdamW schedules train through TrainingNet"),
        }
    }

    /// The trained network, on the host.
    fn into_network(self) -> Result<Network> {
        match self {
            Trainer::Sgd(net, _) => Ok(net),
            Trainer::AdamW(full) => Ok(full.into_host().map_err(device_error)?.0),
        }
    }
}

impl Adaptation<'_, '_> {
    /// One iteration `it` of adaptation (recorded as `iter`); the parameters are updated.
    pub(super) fn step(&mut self, it: usize, iter: usize) -> Result<IterRecord> {
        let (layout, cfg) = (self.layout, self.cfg);
        let (n_train, off) = (layout.n_train(), layout.target_offset());
        let obs = self.observe()?;
        let target_probs = obs.probs.slice(s![off.., ..]);
        let estimate = if self.method.needs_shift_estimate() {
            Some(self.estimate(obs.probs.view())?)
        } else {
            None
        };
        let prior: Vec<f64> = match &estimate {
            Some(e) if cfg.mul.prior_weighting => e.target_prior.clone(),
            _ => layout.source_prior.clone(),
        };
        let (confident, pseudo_labels) = pseudo_labels(target_probs, &prior, cfg.mul.tau);
        let full = self.trainer.adamw();
        let logits = full.logits();
        // Z is on the host unless it stayed on the device for the method's terms.
        let none = Array2::<f32>::zeros((0, 0));
        let (zs, zt) = match full.z() {
            Some(z) => (z.slice_move(s![..n_train, ..]), z.slice_move(s![off.., ..])),
            None => (none.view(), none.view()),
        };
        let inputs = AdaptInputs {
            zs,
            logits_s: logits.slice(s![..n_train, ..]),
            ys: &layout.y_train,
            zt,
            logits_t: logits.slice(s![off.., ..]),
            target_probs,
            progress: it as f64 / cfg.adapt_iters as f64,
            estimate: estimate.as_ref(),
            confident: &confident,
            pseudo_labels: &pseudo_labels,
            prior: &prior,
        };
        let out = if self.tracker.source_fallback() {
            StepOutput::none()
        } else if let (None, Some(kept)) = (full.z(), full.resident()) {
            self.method.step_resident(&inputs, kept, (n_train, off))?
        } else {
            self.method.step(&inputs)?
        };
        let (ce, d_train_logits) =
            source_cross_entropy(logits.slice(s![..n_train, ..]), &layout.y_train, &out.ce_weights);
        let total = out.terms.iter().fold(ce, |t, v| t + v);
        check_finite("cross-entropy", it, Stage::Adapt, ce, cfg)?;
        for (what, v) in out.checked_values() {
            check_finite(what, it, Stage::Adapt, v, cfg)?;
        }
        self.adamw_step(
            it,
            rows_seen(layout, self.method.sees_target()),
            (n_train, off),
            &d_train_logits,
            &out,
        )?;
        if let Some(stopper) = &mut self.stopper {
            let state = AdaptState {
                prior: estimate.as_ref().map(|e| e.target_prior.as_slice()),
                confident: &confident,
                labels: &pseudo_labels,
                n_target: target_probs.nrows(),
                du_pooled: out.mul.is_some_and(|m| m.du_pooled),
                j_tu: out.mul.map_or(0.0, |m| m.j_tu),
            };
            self.converged = stopper.observe(it, &state);
        }
        let target_prior = estimate.map(|e| e.target_prior);
        Ok(adapt_record(iter, (ce, total), &out, confident.len(), obs.temperature, target_prior))
    }

    /// Backward through G and F of the cross-entropy's gradient on the first `rows.0` rows of
    /// `pass` (of input `x`) and the method's on its source rows (from 0) and target rows (from
    /// `rows.1`), then one SGD step (the baselines' mini-batch schedule). Rows in between (the
    /// hold-out) get no gradient.
    pub(super) fn sgd_step(
        &mut self,
        it: usize,
        (x, pass): (ArrayView2<f32>, &Pass),
        rows: (usize, usize),
        d_train_logits: &Array2<f32>,
        out: &StepOutput,
    ) -> Result<()> {
        let (d_logits, d_z) = (
            logit_gradients(rows, pass.logits.dim(), d_train_logits, out),
            z_gradients(rows, pass.z.dim(), out),
        );
        let (net, sgd) = self.trainer.sgd();
        let grads = net.backward(x, pass, d_logits.view(), Some(d_z.view()));
        if !grads.is_finite() {
            return Err(self.gradient_error(it, d_train_logits, out));
        }
        sgd.step(net, &grads);
        Ok(())
    }

    /// [`Adaptation::sgd_step`] for the AdamW schedules: the pass the trainer keeps (input
    /// `x`), then one AdamW step. Where the forward left Z on the device (`TrainingNet::resident`), the method's ∂ℓ/∂Z
    /// is there too and only ∂ℓ/∂logits goes up.
    pub(super) fn adamw_step(
        &mut self,
        it: usize,
        x: ArrayView2<f32>,
        rows: (usize, usize),
        d_train_logits: &Array2<f32>,
        out: &StepOutput,
    ) -> Result<()> {
        let full = self.trainer.adamw_mut();
        let d_logits = logit_gradients(rows, full.logits().dim(), d_train_logits, out);
        let stepped = match full.z().map(|z| z.dim()) {
            Some(z_dim) => {
                let d_z = z_gradients(rows, z_dim, out);
                full.step(x, d_logits.view(), Some(d_z.view()))
            }
            None => full.step_resident(x, d_logits.view()),
        };
        if !stepped.map_err(device_error)? {
            return Err(self.gradient_error(it, d_train_logits, out));
        }
        Ok(())
    }

    /// The error of a gradient that is not finite, naming the term it came from.
    fn gradient_error(&self, it: usize, d_train_logits: &Array2<f32>, out: &StepOutput) -> Error {
        let term = if !out.grad_zs.iter().chain(&out.grad_zt).all(all_finite)
            || out.resident_grad.is_some_and(|g| !g.is_finite())
        {
            self.method.gradient_name()
        } else if !all_finite(d_train_logits) {
            "the gradient of the cross-entropy"
        } else {
            "the gradient of the network's parameters"
        };
        gradient_error(Stage::Adapt, it, term, self.cfg)
    }

    /// Forward of the rows the method sees (`[train; hold-out; target]`, or the source rows
    /// for `source`); pseudo-labels and BBSE read evaluation-mode outputs (dropout off;
    /// pitfall 4), temperature-calibrated on labelled source rows the network never trains on.
    fn observe(&mut self) -> Result<Observation> {
        let layout = self.layout;
        let x = rows_seen(layout, self.method.sees_target());
        let n_train = layout.n_train();
        // Z stays on the device where the method's terms can run there.
        let keep_z_there = self.method.steps_resident() && !self.tracker.source_fallback();
        let full = self.trainer.adamw_mut();
        let with_z = !(keep_z_there && full.resident().is_some());
        full.forward(x, &Forward { train: true, stats_rows: n_train }, &mut self.rng, with_z)
            .map_err(device_error)?;
        // Without dropout the training-mode pass is the evaluation-mode one: read in place.
        let eval_pass = if self.cfg.network.dropout > 0.0 {
            Some(
                full.logits_of(x, &Forward { train: false, stats_rows: n_train }, &mut self.rng)
                    .map_err(device_error)?,
            )
        } else {
            None
        };
        let eval_logits = eval_pass.as_ref().map_or(full.logits(), |l| l.view());
        let temperature =
            if self.cfg.label_shift.calibrate && self.method.calibrates() && layout.n_hold() > 0 {
                label_shift::fit_temperature(
                    eval_logits.slice(s![layout.hold_rows(), ..]),
                    &layout.y_hold,
                )?
            } else {
                1.0
            };
        let probs = label_shift::softmax_with_temperature(eval_logits, temperature);
        Ok(Observation { temperature, probs })
    }

    /// BBSE-QP on the hold-out (or, without one, the training rows) and the target rows.
    pub(super) fn estimate(&mut self, probs: ArrayView2<f32>) -> Result<ShiftEstimate> {
        let layout = self.layout;
        let target = probs.slice(s![layout.target_offset().., ..]);
        let (conf_probs, conf_labels) = if layout.n_hold() > 0 {
            (probs.slice(s![layout.hold_rows(), ..]), &layout.y_hold)
        } else {
            (probs.slice(s![..layout.n_train(), ..]), &layout.y_train)
        };
        self.tracker.update(conf_probs, conf_labels, target, &layout.source_prior)
    }

    /// Evaluation-mode outputs of the final network, and the fit.
    /// Errors: a file the rows are read from could not be read, or changed.
    pub(super) fn finish(
        self,
        data: &FitData,
        history: Vec<IterRecord>,
        pretraining_reused: bool,
    ) -> Result<Fitted> {
        let Adaptation { layout, trainer, tracker, cfg, .. } = self;
        let net = trainer.into_network()?;
        let (target_probs, holdout_probs, source_z, target_z, bn_stats_rows) =
            if layout.is_borrowed() {
                // Chunked, with the statistics training evaluated with (`chunked`).
                let stats_rows = super::chunked::bn_stats_rows(layout, cfg);
                let eval = EvalNet::new(&net, layout, &stats_rows, cfg.minibatch.chunk_rows)?;
                let (target_z, target_logits) = eval.rows(data.target_x)?;
                let (_, hold_logits) = eval.range(layout, layout.hold_rows())?;
                let source_z = eval.rows(data.source_x)?.0;
                let rows = match &layout.borrowed {
                    Some(b) => stats_rows.iter().map(|&r| b.source_order[r]).collect(),
                    None => stats_rows,
                };
                (
                    softmax(target_logits.view()),
                    softmax(hold_logits.view()),
                    source_z,
                    target_z,
                    Some(rows),
                )
            } else {
                // Full-batch layouts are built from rows in memory only (`Layout::new`).
                let held = "full-batch fits hold their rows in memory";
                let (source_x, target_x) =
                    (data.source_x.memory().expect(held), data.target_x.memory().expect(held));
                let stats_x = Some(layout.x_train());
                let target_probs = net.predict_proba(target_x, stats_x);
                let holdout_probs =
                    net.predict_proba(layout.x_source().slice(s![layout.n_train().., ..]), stats_x);
                let source_z = net.eval_outputs(source_x, stats_x).0;
                let target_z = net.eval_outputs(target_x, stats_x).0;
                (target_probs, holdout_probs, source_z, target_z, None)
            };
        Ok(Fitted {
            bn_stats_rows,
            network: net,
            target_probs,
            source_z,
            target_z,
            shift: tracker.last,
            source_prior: layout.source_prior.clone(),
            history,
            n_train: layout.n_train(),
            n_holdout: layout.n_hold(),
            prior_guard: tracker.guard,
            adaptation_check: None,
            confusion_filled_classes: tracker.filled,
            floored_classes: tracker.floored,
            holdout_rows: layout.hold_idx.clone(),
            holdout_probs,
            pretraining_reused,
            device: crate::device::DeviceUsed::default(),
        })
    }
}

/// The rows a full-batch iteration forwards: `[train; hold-out; target]`, or the source rows
/// for a method that does not see the target (`source`).
fn rows_seen<'a>(layout: &'a Layout, sees_target: bool) -> ArrayView2<'a, f32> {
    if sees_target {
        layout.x_all.view()
    } else {
        layout.x_source()
    }
}

fn all_finite(a: &Array2<f32>) -> bool {
    a.iter().all(|v| v.is_finite())
}

/// `dst[offset + i] += src[i]` for every row i of `src`, if any.
pub(super) fn add_rows(dst: &mut Array2<f32>, offset: usize, src: Option<&Array2<f32>>) {
    if let Some(src) = src {
        let mut block = dst.slice_mut(s![offset..offset + src.nrows(), ..]);
        block += src;
    }
}

/// The history record of adaptation iteration `iter`: `losses` = (cross-entropy, total).
pub(super) fn adapt_record(
    iter: usize,
    losses: (f64, f64),
    out: &StepOutput,
    n_confident: usize,
    temperature: f64,
    target_prior: Option<Vec<f64>>,
) -> IterRecord {
    let mul = out.mul.unwrap_or_default();
    IterRecord {
        stage: Stage::Adapt,
        iter,
        ce: losses.0,
        j_tu: mul.j_tu,
        j_du: mul.j_du,
        total: losses.1,
        lambda_du_applied: mul.lambda_du_applied,
        n_confident,
        du_pooled: mul.du_pooled,
        temperature,
        target_prior,
        transfer: out.transfer,
        holdout: None,
    }
}
