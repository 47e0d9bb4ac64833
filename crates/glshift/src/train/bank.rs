//! Adaptation by mini-batch with a memory bank (MUL's family and `source` when `training`
//! resolves to mini-batch; the papers' mini-batch baselines keep `minibatch`). Step t of T:
//!
//! 1. every `minibatch.refresh_every` steps (from t = 0), a **full view** in row chunks with
//!    frozen BatchNorm statistics (`chunked`): the hold-out's logits (temperature), every
//!    target row's calibrated probabilities and Z, the Z of the BatchNorm sample of source rows;
//!    BBSE-QP (the tracker, prior guard included), τ-confident pseudo-labels, and the
//!    label-free stop rule (observed once per view, its window counted in views);
//! 2. a class-stratified batch of b source rows and b uniformly drawn target rows, forward in
//!    training mode (BatchNorm statistics from the source batch); their Z replace theirs in
//!    the bank;
//! 3. the method's term on the batch joined by **context rows** from the bank
//!    (`minibatch.context_rows` per domain: source rows stratified by class, confident target
//!    rows stratified by pseudo-label, as constants), so that the conditional embeddings of
//!    J_TU and J_DU rest on every class and on more than one batch while gradients flow
//!    through the batch; pseudo-labels and the prior come from the latest view;
//! 4. the (importance-weighted) cross-entropy of the source batch, backward, AdamW (continued
//!    from pre-training, as full-batch).
//!
//! Memory is the model, the batch, one chunk and O((n_t + sample) × z_dim); per-step cost
//! does not grow with n. Deterministic per seed.

use crate::seeds::{stream_seed, Stream};
use ndarray::{concatenate, s, Array2, ArrayView2, Axis};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use super::adapt::{adapt_record, pseudo_labels, source_cross_entropy, Adaptation};
use super::chunked::{bn_stats_rows, EvalNet, StratifiedSampler};
use super::converge::AdaptState;
use super::guard::check_finite;
use super::guard::device_error;
use super::layout::Layout;
use super::minibatch::Sampler;
use super::records::{IterRecord, Stage};
use crate::config::FitConfig;
use crate::label_shift::{self, ShiftEstimate};
use crate::methods::method::{AdaptInputs, StepOutput};
use crate::Result;

/// The memory bank and samplers of a mini-batch adaptation.
pub(super) struct Bank {
    /// The BatchNorm sample (stacked indices of source training rows) and its labels: also
    /// the pool the source context rows come from.
    pool: Vec<usize>,
    /// Position in `pool` of each source training row, `u32::MAX` when not in it.
    pool_pos: Vec<u32>,
    /// Z of the pool rows and of every target row (latest view, updated by each batch).
    zs_pool: Array2<f32>,
    zt: Array2<f32>,
    /// Calibrated evaluation-mode probabilities of every target row (latest view).
    target_probs: Array2<f32>,
    temperature: f64,
    estimate: Option<ShiftEstimate>,
    prior: Vec<f64>,
    /// Pseudo-label of each target row, `u32::MAX` when not τ-confident (latest view).
    label_of: Vec<u32>,
    n_confident: usize,
    source: StratifiedSampler,
    target: Sampler,
    context_s: StratifiedSampler,
    context_t: StratifiedSampler,
    rng: ChaCha8Rng,
    /// J_TU of the steps since the last view (the stop rule reads their mean).
    j_tu_sum: f64,
    j_tu_steps: usize,
    /// Whether the last step's J_DU pooled the confident target rows.
    du_pooled: bool,
    views: usize,
}

impl Bank {
    pub fn new(layout: &Layout, cfg: &FitConfig) -> Self {
        let mb = &cfg.minibatch;
        let train_rows: Vec<usize> = (0..layout.n_train()).collect();
        let pool = bn_stats_rows(layout, cfg);
        let mut pool_pos = vec![u32::MAX; layout.n_train()];
        pool.iter().enumerate().for_each(|(p, &r)| pool_pos[r] = p as u32);
        let pool_y: Vec<usize> = pool.iter().map(|&r| layout.y_train[r]).collect();
        let positions: Vec<usize> = (0..pool.len()).collect();
        let n_target = layout.n_rows() - layout.target_offset();
        Bank {
            context_s: StratifiedSampler::new(&positions, &pool_y, layout.c, mb.context_rows),
            pool,
            pool_pos,
            zs_pool: Array2::zeros((0, 0)),
            zt: Array2::zeros((0, 0)),
            target_probs: Array2::zeros((0, layout.c)),
            temperature: 1.0,
            estimate: None,
            prior: layout.source_prior.clone(),
            label_of: vec![u32::MAX; n_target],
            n_confident: 0,
            source: StratifiedSampler::new(&train_rows, &layout.y_train, layout.c, mb.batch_size),
            target: Sampler::new(n_target, mb.batch_size),
            context_t: StratifiedSampler::new(&[], &[], layout.c, 0),
            rng: ChaCha8Rng::seed_from_u64(stream_seed(cfg.seed, Stream::Bank)),
            j_tu_sum: 0.0,
            j_tu_steps: 0,
            du_pooled: false,
            views: 0,
        }
    }
}

impl Adaptation<'_, '_> {
    /// One mini-batch step `it` (recorded as `iter`) with the bank; the parameters are updated.
    pub(super) fn bank_step(
        &mut self,
        bank: &mut Bank,
        it: usize,
        iter: usize,
    ) -> Result<IterRecord> {
        let (layout, cfg) = (self.layout, self.cfg);
        let sees_target = self.method.sees_target();
        if sees_target && it % cfg.minibatch.refresh_every == 0 {
            self.refresh_view(bank)?;
        }
        let src = bank.source.next(&mut bank.rng);
        let ys: Vec<usize> = src.iter().map(|&i| layout.y_train[i]).collect();
        let nb = src.len();
        if !sees_target || self.tracker.source_fallback() {
            // `source`, or MUL under the prior guard's `source` fallback: cross-entropy alone.
            let x = layout.gather(&src)?;
            let full = self.trainer.adamw_mut();
            full.forward(
                x.view(),
                &crate::nn::Forward { train: true, stats_rows: nb },
                &mut self.rng,
                true,
            )
            .map_err(device_error)?;
            let out = StepOutput::none();
            let (ce, d) = source_cross_entropy(full.logits(), &ys, &out.ce_weights);
            check_finite("cross-entropy", it, Stage::Adapt, ce, cfg)?;
            self.adamw_step(it, x.view(), (nb, nb), &d, &out)?;
            return Ok(adapt_record(
                iter,
                (ce, ce),
                &out,
                bank.n_confident,
                bank.temperature,
                None,
            ));
        }
        let tgt = bank.target.next(&mut bank.rng);
        let off = layout.target_offset();
        let rows: Vec<usize> = src.iter().copied().chain(tgt.iter().map(|&j| off + j)).collect();
        let x = layout.gather(&rows)?;
        let full = self.trainer.adamw_mut();
        full.forward(
            x.view(),
            &crate::nn::Forward { train: true, stats_rows: nb },
            &mut self.rng,
            true,
        )
        .map_err(device_error)?;
        let z = full.z().expect("the forward keeps Z").to_owned();
        update_bank(bank, z.view(), &src, &tgt);
        let out = self.method_on_batch(bank, z.view(), &ys, &tgt, it)?;
        let logits = self.trainer.adamw().logits();
        let (ce, d_train_logits) =
            source_cross_entropy(logits.slice(s![..nb, ..]), &ys, &out.ce_weights);
        let total = out.terms.iter().fold(ce, |t, v| t + v);
        check_finite("cross-entropy", it, Stage::Adapt, ce, cfg)?;
        for (what, v) in out.checked_values() {
            check_finite(what, it, Stage::Adapt, v, cfg)?;
        }
        self.adamw_step(it, x.view(), (nb, nb), &d_train_logits, &out)?;
        bank.j_tu_sum += out.mul.map_or(0.0, |m| m.j_tu);
        bank.j_tu_steps += 1;
        bank.du_pooled = out.mul.is_some_and(|m| m.du_pooled);
        let target_prior = bank.estimate.as_ref().map(|e| e.target_prior.clone());
        Ok(adapt_record(iter, (ce, total), &out, bank.n_confident, bank.temperature, target_prior))
    }

    /// The method's term on `[source batch; source context]` and `[target batch; target
    /// context]`, its gradients cut to the batch rows (the context rows are constants).
    fn method_on_batch(
        &mut self,
        bank: &mut Bank,
        z: ArrayView2<f32>,
        ys: &[usize],
        tgt: &[usize],
        it: usize,
    ) -> Result<StepOutput> {
        let (c, nb, nbt) = (self.layout.c, ys.len(), tgt.len());
        let context = self.cfg.minibatch.context_rows > 0;
        let cs = if context { bank.context_s.next(&mut bank.rng) } else { Vec::new() };
        let ct = if context && !bank.context_t.is_empty() {
            bank.context_t.next(&mut bank.rng)
        } else {
            Vec::new()
        };
        let zs = concatenate![Axis(0), z.slice(s![..nb, ..]), bank.zs_pool.select(Axis(0), &cs)];
        let zt = concatenate![Axis(0), z.slice(s![nb.., ..]), bank.zt.select(Axis(0), &ct)];
        let mut ys_all = ys.to_vec();
        ys_all.extend(cs.iter().map(|&p| self.layout.y_train[bank.pool[p]]));
        let target_rows: Vec<usize> = tgt.iter().chain(&ct).copied().collect();
        let (confident, labels): (Vec<usize>, Vec<usize>) = target_rows
            .iter()
            .enumerate()
            .filter(|(_, &j)| bank.label_of[j] != u32::MAX)
            .map(|(r, &j)| (r, bank.label_of[j] as usize))
            .unzip();
        let target_probs = bank.target_probs.select(Axis(0), &target_rows);
        // MUL's family reads Z; the logits of context rows are not kept, and no method of the
        // bank's path reads them (zeros stand in).
        let logits_s = Array2::<f32>::zeros((zs.nrows(), c));
        let logits_t = Array2::<f32>::zeros((zt.nrows(), c));
        let mut out = self.method.step(&AdaptInputs {
            zs: zs.view(),
            logits_s: logits_s.view(),
            ys: &ys_all,
            zt: zt.view(),
            logits_t: logits_t.view(),
            target_probs: target_probs.view(),
            progress: it as f64 / self.cfg.adapt_iters as f64,
            estimate: bank.estimate.as_ref(),
            confident: &confident,
            pseudo_labels: &labels,
            prior: &bank.prior,
        })?;
        out.grad_zs = out.grad_zs.map(|g| g.slice(s![..nb, ..]).to_owned());
        out.grad_zt = out.grad_zt.map(|g| g.slice(s![..nbt, ..]).to_owned());
        out.grad_logits_s = None;
        out.grad_logits_t = None;
        Ok(out)
    }

    /// The full view of step 1 (see the module docs).
    fn refresh_view(&mut self, bank: &mut Bank) -> Result<()> {
        let (layout, cfg) = (self.layout, self.cfg);
        // The pool is gathered once: its statistics, its Z and (without a hold-out) its logits.
        let x_pool = layout.gather(&bank.pool)?;
        let net = self.trainer.adamw().network().map_err(device_error)?;
        let eval = EvalNet::from_rows(&net, x_pool.view(), cfg.minibatch.chunk_rows);
        let (zs_pool, pool_logits) = eval.rows(crate::data::Rows::Memory(x_pool.view()))?;
        drop(x_pool);
        bank.zs_pool = zs_pool;
        let calibrate =
            cfg.label_shift.calibrate && self.method.calibrates() && layout.n_hold() > 0;
        let (_, hold_logits) = eval.range(layout, layout.hold_rows())?;
        bank.temperature = if calibrate {
            label_shift::fit_temperature(hold_logits.view(), &layout.y_hold)?
        } else {
            1.0
        };
        let (zt, target_logits) = eval.range(layout, layout.target_offset()..layout.n_rows())?;
        bank.zt = zt;
        bank.target_probs =
            label_shift::softmax_with_temperature(target_logits.view(), bank.temperature);
        if self.method.needs_shift_estimate() {
            let estimate = if layout.n_hold() > 0 {
                let hold =
                    label_shift::softmax_with_temperature(hold_logits.view(), bank.temperature);
                self.tracker.update(
                    hold.view(),
                    &layout.y_hold,
                    bank.target_probs.view(),
                    &layout.source_prior,
                )?
            } else {
                let pool =
                    label_shift::softmax_with_temperature(pool_logits.view(), bank.temperature);
                let y: Vec<usize> = bank.pool.iter().map(|&r| layout.y_train[r]).collect();
                self.tracker.update(
                    pool.view(),
                    &y,
                    bank.target_probs.view(),
                    &layout.source_prior,
                )?
            };
            bank.estimate = Some(estimate);
        }
        bank.prior = match &bank.estimate {
            Some(e) if cfg.mul.prior_weighting => e.target_prior.clone(),
            _ => layout.source_prior.clone(),
        };
        let (confident, labels) = pseudo_labels(bank.target_probs.view(), &bank.prior, cfg.mul.tau);
        bank.label_of.fill(u32::MAX);
        confident.iter().zip(&labels).for_each(|(&j, &k)| bank.label_of[j] = k as u32);
        bank.n_confident = confident.len();
        bank.context_t =
            StratifiedSampler::new(&confident, &labels, layout.c, cfg.minibatch.context_rows);
        self.observe_view(bank, &confident, &labels);
        Ok(())
    }

    /// The stop rule at a view: its state, and the mean J_TU of the steps since the last view.
    fn observe_view(&mut self, bank: &mut Bank, confident: &[usize], labels: &[usize]) {
        let j_tu = if bank.j_tu_steps > 0 { bank.j_tu_sum / bank.j_tu_steps as f64 } else { 0.0 };
        let du_pooled = bank.du_pooled;
        if let Some(stopper) = &mut self.stopper {
            let state = AdaptState {
                prior: bank.estimate.as_ref().map(|e| e.target_prior.as_slice()),
                confident,
                labels,
                n_target: bank.label_of.len(),
                du_pooled,
                j_tu,
            };
            // The first view has no steps behind it; the rule counts views from the second.
            if bank.views > 0 {
                self.converged = stopper.observe(bank.views - 1, &state);
            }
        }
        bank.views += 1;
        bank.j_tu_sum = 0.0;
        bank.j_tu_steps = 0;
    }
}

/// The batch's training-mode Z replace the bank's for its target rows and pooled source rows.
fn update_bank(bank: &mut Bank, z: ArrayView2<f32>, src: &[usize], tgt: &[usize]) {
    let nb = src.len();
    for (r, &i) in src.iter().enumerate() {
        let p = bank.pool_pos[i];
        if p != u32::MAX {
            bank.zs_pool.row_mut(p as usize).assign(&z.row(r));
        }
    }
    for (r, &j) in tgt.iter().enumerate() {
        bank.zt.row_mut(j).assign(&z.row(nb + r));
    }
}

/// The stop rule's settings counted in views instead of steps.
pub(super) fn view_units(cfg: &FitConfig) -> FitConfig {
    let every = cfg.minibatch.refresh_every;
    let mut units = cfg.clone();
    units.adapt_stop.window = cfg.adapt_stop.window.div_ceil(every);
    units.adapt_stop.min_iters = cfg.adapt_stop.min_iters.div_ceil(every);
    units
}
