//! The one training loop (paper, Algorithm 1): pre-train on the source with cross-entropy, then
//! adapt. Every method runs through here; a method only changes the loss it adds.
//!
//! Rows are laid out as `[source train; source hold-out; target]` in one matrix so that a single
//! full-batch forward gives everything an iteration needs, and BatchNorm (when enabled) takes its
//! statistics from the source training rows alone (pitfall 4 of docs/pitfalls-label-shift.md).
//! The hold-out rows and the target rows never receive a cross-entropy gradient. Target labels
//! are not an input of this module.

use ndarray::{concatenate, s, Array2, ArrayView2, Axis};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

use super::baselines::{self, AdaptInputs, AdaptOutput};
use super::config::{ConfusionRows, FitConfig};
use super::mul::{mul_terms, MulInputs, MulTerms};
use crate::label_shift::{self, ShiftEstimate};
use crate::nn::{argmax_row, weighted_cross_entropy, Adam, Forward, Network};
use crate::{Error, Result};

/// Training stage of an iteration.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Stage {
    Pretrain,
    Adapt,
}

/// What one iteration measured (all values before the parameter update).
#[derive(Clone, Debug, Serialize)]
pub struct IterRecord {
    pub stage: Stage,
    pub iter: usize,
    /// (Importance-weighted) cross-entropy on the source training rows.
    pub ce: f64,
    pub j_tu: f64,
    pub j_du: f64,
    /// CE + λ_TU·J_TU − λ_DU·J_DU (with the λ_DU actually applied).
    pub total: f64,
    /// λ_DU applied at this iteration (the balance rule makes it vary).
    pub lambda_du: f64,
    /// Target rows above the confidence threshold (adaptation only).
    pub n_confident: usize,
    /// Whether confident target rows are part of J_DU at this iteration.
    pub du_pooled: bool,
    /// Temperature fitted on the source hold-out (1 when not calibrating).
    pub temperature: f64,
    /// BBSE-QP target prior estimate used at this iteration (adaptation with label shift).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target_prior: Option<Vec<f64>>,
    /// A baseline's transfer term at this iteration (its `total` includes it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub transfer: Option<TransferRecord>,
}

/// A baseline's transfer term (MMD², or the discriminator's domain loss) and the weight λ applied.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct TransferRecord {
    pub value: f64,
    pub lambda: f64,
}

/// Progress callback payload.
#[derive(Clone, Copy, Debug)]
pub struct Progress {
    pub done: usize,
    pub total: usize,
    pub stage: Stage,
    pub loss: f64,
}

/// A trained model and what the loop recorded.
#[derive(Clone, Debug)]
pub struct Fitted {
    pub network: Network,
    /// Target class probabilities (eval mode), n_t × c.
    pub target_probs: Array2<f32>,
    /// Eval-mode representations Z = G(x) of every source row (input order) and every target
    /// row, for the analysis metrics and figures.
    pub source_z: Array2<f32>,
    pub target_z: Array2<f32>,
    /// Final label-shift estimate (MUL with importance weighting), None for `source`.
    pub shift: Option<ShiftEstimate>,
    /// Source prior pˢ over all source rows.
    pub source_prior: Vec<f64>,
    pub history: Vec<IterRecord>,
    /// Source rows used for training and held out for the confusion matrix.
    pub n_train: usize,
    pub n_holdout: usize,
    /// Classes whose hold-out had no row (their confusion column was filled; pitfall 1).
    pub confusion_filled_classes: Vec<usize>,
    /// Classes whose estimated target prior fell under the floor and was set to 0.
    pub floored_classes: Vec<usize>,
    /// Indices (into the source rows) of the stratified hold-out, in the row order of
    /// [`Fitted::holdout_probs`].
    pub holdout_rows: Vec<usize>,
    /// Class probabilities of the hold-out rows from the final network (eval mode, plain
    /// softmax without temperature), n_hold × c: rows it never trained on, for label-shift
    /// estimators (`glshift shift estimate --data`).
    pub holdout_probs: Array2<f32>,
    /// Pre-training was taken from the [`PretrainCache`] passed to [`fit_with_cache`].
    pub pretraining_reused: bool,
}

/// Data of a fit: preprocessed features, source labels (0-based), number of classes.
pub struct FitData<'a> {
    pub source_x: ArrayView2<'a, f32>,
    pub source_y: &'a [usize],
    pub target_x: ArrayView2<'a, f32>,
    pub n_classes: usize,
    /// Source rows to hold out instead of the stratified split of `label_shift`
    /// (cross-fitting passes one fold); `None` = that split.
    pub holdout: Option<&'a [usize]>,
}

fn one_hot(labels: &[usize], c: usize) -> Array2<f32> {
    let mut y = Array2::<f32>::zeros((labels.len(), c));
    for (i, &k) in labels.iter().enumerate() {
        y[[i, k]] = 1.0;
    }
    y
}

/// What to do when training diverges, with the settings that control it.
fn divergence_advice(cfg: &FitConfig) -> String {
    format!(
        "training diverged; lower `optimizer.lr` (now {:?}) or `mul.lambda_tu`/`mul.lambda_du` (now {:?}/{:?}), \
         or check the scale of the features (`preprocess`, now {})",
        cfg.optimizer.lr, cfg.mul.lambda_tu, cfg.mul.lambda_du, cfg.preprocess
    )
}

/// Stops training when a loss term is NaN/Inf, naming the stage, iteration and term.
fn check_finite(what: &str, iter: usize, stage: Stage, v: f64, cfg: &FitConfig) -> Result<()> {
    if v.is_finite() {
        Ok(())
    } else {
        Err(Error::numerical(
            format!("{stage:?} iteration {iter}"),
            format!("{what} is {v}: {}", divergence_advice(cfg)),
        ))
    }
}

fn all_finite(a: &Array2<f32>) -> bool {
    a.iter().all(|v| v.is_finite())
}

/// `dst[offset + i] += src[i]` for every row i of `src`.
fn add_rows(dst: &mut Array2<f32>, offset: usize, src: &Array2<f32>) {
    let mut block = dst.slice_mut(s![offset..offset + src.nrows(), ..]);
    block += src;
}

/// Estimated peak memory in bytes of training on `n_rows` rows (source + target) of dimension
/// `d` with `c` classes: the feature matrix and its copies (loaded, preprocessed, row-stacked:
/// 5 × n·d), the parameters of G and F with their gradient, two Adam moments and the best
/// pre-training snapshot (network + moments: 7 × parameters), the activations kept for the
/// backward pass (3 × n × widths) and the kernel terms' n×n Gram matrices in f64 (3 × n²).
/// All f32 except the Gram matrices. A coarse upper estimate, meant to refuse hopeless
/// configurations (e.g. 10⁶-dimensional rows) before allocating, not to budget precisely.
pub fn memory_estimate_bytes(n_rows: usize, d: usize, c: usize, cfg: &FitConfig) -> f64 {
    let (n, d, c) = (n_rows as f64, d as f64, c as f64);
    let mut params = 0.0;
    let mut width_in = d;
    for &h in &cfg.network.hidden {
        params += (width_in + 1.0) * h as f64;
        width_in = h as f64;
    }
    params += (width_in + 1.0) * c;
    let widths: f64 = cfg.network.hidden.iter().map(|&h| h as f64).sum::<f64>() + c;
    4.0 * (5.0 * n * d + 7.0 * params + 3.0 * n * widths) + 8.0 * 3.0 * n * n
}

/// Refuses a fit whose [`memory_estimate_bytes`] exceeds `cfg.max_memory_gib`.
pub fn check_memory(n_rows: usize, d: usize, c: usize, cfg: &FitConfig) -> Result<()> {
    let gib = memory_estimate_bytes(n_rows, d, c, cfg) / (1u64 << 30) as f64;
    if gib > cfg.max_memory_gib {
        return Err(Error::param(
            "max_memory_gib",
            cfg.max_memory_gib,
            format!(
                "training {n_rows} rows of dimension {d} with hidden widths {:?} needs about {gib:.1} GiB; \
                 reduce the feature dimension (e.g. PCA) or the first hidden width, or raise \
                 `max_memory_gib` in the config if the machine has the memory",
                cfg.network.hidden
            ),
        ));
    }
    Ok(())
}

/// Network, optimiser and random-stream state at the end of pre-training, with its records.
#[derive(Clone)]
pub struct PretrainState {
    net: Network,
    adam: Adam,
    rng: ChaCha8Rng,
    history: Vec<IterRecord>,
}

/// Everything pre-training reads: the settings below and the source rows in training order
/// (`[train; hold-out]`, so the split is part of it) with their labels. Not the method, the
/// adaptation settings or the target. A setting added to pre-training must be added here.
#[derive(Clone, Debug, PartialEq)]
struct PretrainKey {
    settings: String,
    shape: (usize, usize, usize),
    fingerprint: u64,
}

impl PretrainKey {
    fn new(cfg: &FitConfig, x_source: ArrayView2<f32>, y_train: &[usize], y_hold: &[usize]) -> Self {
        use std::hash::{Hash, Hasher};
        let settings = serde_json::json!({
            "seed": cfg.seed,
            "network": cfg.network,
            "optimizer": cfg.optimizer,
            "pretrain_iters": cfg.pretrain_iters,
            "pretrain_patience": cfg.pretrain_patience,
        })
        .to_string();
        // Exact bits, not values: equal keys must mean identical inputs.
        let mut h = std::collections::hash_map::DefaultHasher::new();
        x_source.iter().for_each(|v| v.to_bits().hash(&mut h));
        y_train.hash(&mut h);
        y_hold.hash(&mut h);
        PretrainKey { settings, shape: (x_source.nrows(), x_source.ncols(), y_train.len()), fingerprint: h.finish() }
    }
}

/// Pre-trained states shared by the fits of a grid (`glshift bench`: every method of one task
/// and seed pre-trains the same network on the same rows). A fit whose key matches reuses the
/// state; results are unchanged.
#[derive(Default)]
pub struct PretrainCache {
    entries: Vec<(PretrainKey, PretrainState)>,
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

    fn get(&mut self, key: &PretrainKey) -> Option<PretrainState> {
        let state = self.entries.iter().find(|(k, _)| k == key).map(|(_, s)| s.clone());
        self.hits += usize::from(state.is_some());
        state
    }

    fn insert(&mut self, key: PretrainKey, state: PretrainState) {
        self.entries.push((key, state));
    }
}

/// Pre-training (Algorithm 1, first stage): cross-entropy on the source training rows
/// (`x_source = [train; hold-out]`, `n_train = y_train.len()`), stopped by the hold-out NLL with
/// `cfg.pretrain_patience`, and the best network by that NLL (with its optimiser state)
/// restored. Without a hold-out it runs `cfg.pretrain_iters` iterations.
fn pretrain(
    x_source: ArrayView2<f32>,
    y_train: &[usize],
    y_hold: &[usize],
    d: usize,
    c: usize,
    cfg: &FitConfig,
    progress: &mut dyn FnMut(Progress),
) -> Result<PretrainState> {
    let (n_train, n_hold) = (y_train.len(), y_hold.len());
    let mut net = Network::new(d, c, &cfg.network, cfg.seed)?;
    let mut adam = Adam::new(&cfg.optimizer, &net);
    let mut rng = ChaCha8Rng::seed_from_u64(cfg.seed ^ 0x9e37_79b9_7f4a_7c15);
    let mut history = Vec::with_capacity(cfg.pretrain_iters + cfg.adapt_iters);
    let uniform = vec![1.0f32; n_train];
    let train_fw = Forward { train: true, stats_rows: n_train };
    let eval_fw = Forward { train: false, stats_rows: n_train };
    let needs_eval_pass = cfg.network.dropout > 0.0;
    let mut best: Option<(f64, Network, Adam, usize)> = None;
    for it in 0..cfg.pretrain_iters {
        let pass = net.forward(x_source, &train_fw, &mut rng);
        let (ce, d_train_logits, _) = weighted_cross_entropy(pass.logits.slice(s![..n_train, ..]), y_train, &uniform);
        check_finite("cross-entropy", it, Stage::Pretrain, ce, cfg)?;
        if n_hold > 0 {
            let logits = if needs_eval_pass { net.forward(x_source, &eval_fw, &mut rng).logits } else { pass.logits.clone() };
            let nll = label_shift::calibration::nll_at(logits.slice(s![n_train.., ..]), y_hold, 1.0);
            match &best {
                Some((b, _, _, at)) if nll >= *b => {
                    if it - at >= cfg.pretrain_patience {
                        break;
                    }
                }
                _ => best = Some((nll, net.clone(), adam.clone(), it)),
            }
        }
        let mut d_logits = Array2::<f32>::zeros(pass.logits.raw_dim());
        d_logits.slice_mut(s![..n_train, ..]).assign(&d_train_logits);
        let grads = net.backward(&pass, d_logits.view(), None);
        if !grads.is_finite() {
            return Err(Error::numerical(
                format!("Pretrain iteration {it}"),
                format!("the gradient of the cross-entropy is not finite: {}", divergence_advice(cfg)),
            ));
        }
        adam.step(&mut net, &grads);
        history.push(IterRecord {
            stage: Stage::Pretrain,
            iter: it,
            ce,
            j_tu: 0.0,
            j_du: 0.0,
            total: ce,
            lambda_du: 0.0,
            n_confident: 0,
            du_pooled: false,
            temperature: 1.0,
            target_prior: None,
            transfer: None,
        });
        progress(Progress { done: it + 1, total: cfg.pretrain_iters, stage: Stage::Pretrain, loss: ce });
    }
    if let Some((_, best_net, best_adam, _)) = best {
        net = best_net;
        adam = best_adam;
    }
    Ok(PretrainState { net, adam, rng, history })
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
    cfg.validate()?;
    let c = data.n_classes;
    let (ns_all, d) = data.source_x.dim();
    if data.source_y.len() != ns_all {
        return Err(Error::Shape {
            what: "source labels vs source rows".into(),
            expected: ns_all.to_string(),
            found: data.source_y.len().to_string(),
        });
    }
    if data.target_x.ncols() != d {
        return Err(Error::Shape {
            what: "target feature dimension".into(),
            expected: d.to_string(),
            found: data.target_x.ncols().to_string(),
        });
    }
    check_memory(ns_all + data.target_x.nrows(), d, c, cfg)?;
    let source_prior = label_shift::class_prior(data.source_y, c)?;
    let is_mul = cfg.method.is_mul_family();
    let use_iw = is_mul && cfg.mul.importance_weighting;
    let needs_estimate = cfg.needs_shift_estimate();

    // Source split, the same for every method: a stratified hold-out that the network never
    // trains on. It decides when pre-training stops (source validation) and, for MUL, measures
    // the BBSE confusion matrix and the calibration temperature.
    let (train_idx, hold_idx) = if let Some(h) = data.holdout {
        let mut is_hold = vec![false; ns_all];
        for &i in h {
            if i >= ns_all || is_hold[i] {
                return Err(Error::param("holdout", i, format!("hold-out rows must be distinct and < {ns_all}")));
            }
            is_hold[i] = true;
        }
        if h.is_empty() || h.len() == ns_all {
            return Err(Error::param("holdout", h.len(), "the hold-out must leave rows on both sides"));
        }
        let mut hold = h.to_vec();
        hold.sort_unstable();
        ((0..ns_all).filter(|&i| !is_hold[i]).collect(), hold)
    } else if cfg.label_shift.confusion == ConfusionRows::Holdout {
        label_shift::stratified_holdout(data.source_y, c, cfg.label_shift.holdout_fraction, cfg.seed)?
    } else {
        ((0..ns_all).collect(), Vec::new())
    };
    let (n_train, n_hold) = (train_idx.len(), hold_idx.len());
    let y_train: Vec<usize> = train_idx.iter().map(|&i| data.source_y[i]).collect();
    let y_hold: Vec<usize> = hold_idx.iter().map(|&i| data.source_y[i]).collect();
    let x_train = data.source_x.select(Axis(0), &train_idx);
    let x_source = concatenate![Axis(0), x_train.view(), data.source_x.select(Axis(0), &hold_idx).view()];
    let x_all = concatenate![Axis(0), x_source.view(), data.target_x];
    let ys_onehot = one_hot(&y_train, c);

    let eval_fw = Forward { train: false, stats_rows: n_train };
    let train_fw = Forward { train: true, stats_rows: n_train };
    let needs_eval_pass = cfg.network.dropout > 0.0;
    let uniform = vec![1.0f32; n_train];
    let total_estimate = cfg.pretrain_iters + cfg.adapt_iters;

    // Pre-training reads only the source rows and the settings of `PretrainKey`, so a grid that
    // runs several methods on one task and seed passes a cache and computes it once.
    let mut cache = cache;
    let key = cache.as_ref().map(|_| PretrainKey::new(cfg, x_source.view(), &y_train, &y_hold));
    let cached = match (cache.as_deref_mut(), &key) {
        (Some(c), Some(k)) => c.get(k),
        _ => None,
    };
    let pretraining_reused = cached.is_some();
    let state = match cached {
        Some(state) => state,
        None => {
            let state = pretrain(x_source.view(), &y_train, &y_hold, d, c, cfg, &mut |p| {
                progress(Progress { total: total_estimate, ..p })
            })?;
            if let (Some(cache), Some(key)) = (cache, key) {
                cache.insert(key, state.clone());
            }
            state
        }
    };
    let PretrainState { mut net, mut adam, mut rng, mut history } = state;
    history.reserve(cfg.adapt_iters);
    let pretrain_done = history.len();

    let floor = cfg.prior_floor_for(c);
    let mut shift: Option<ShiftEstimate> = None;
    let mut filled = Vec::new();
    let mut floored = Vec::new();
    let mut support: Option<Vec<bool>> = None;
    let mut du_pooled = false;
    let mut du_trace: Vec<f64> = Vec::new();
    let total_iters = pretrain_done + cfg.adapt_iters;
    let mut baseline = baselines::build(cfg, net.z_dim(), c)?;

    // Adaptation: the same loop for every method; `source` adds no term and no weights.
    for it in 0..cfg.adapt_iters {
        let x_adapt = if cfg.method.adapts() { x_all.view() } else { x_source.view() };
        let pass = net.forward(x_adapt, &train_fw, &mut rng);
        // Pseudo-labels and BBSE come from eval-mode outputs (dropout off; pitfall 4).
        let eval_logits = if needs_eval_pass {
            net.forward(x_adapt, &eval_fw, &mut rng).logits
        } else {
            pass.logits.clone()
        };
        // Calibrated on labelled source rows the network does not train on.
        let temperature = if cfg.calibrates() && n_hold > 0 {
            label_shift::fit_temperature(eval_logits.slice(s![n_train..n_train + n_hold, ..]), &y_hold)?
        } else {
            1.0
        };
        let probs = label_shift::softmax_with_temperature(eval_logits.view(), temperature);
        let hold_probs = probs.slice(s![n_train..n_train + n_hold, ..]);
        let train_probs = probs.slice(s![..n_train, ..]);
        let target_probs = probs.slice(s![n_train + n_hold.., ..]);

        // Label shift: w and p̂ᵗ from BBSE-QP, small priors floored to 0 (pitfall 3).
        let estimate = if needs_estimate {
            let (cp, cy) = if n_hold > 0 { (hold_probs, &y_hold) } else { (train_probs, &y_train) };
            let conf = label_shift::confusion_matrix(cp, cy, &source_prior, cfg.label_shift.soft)?;
            filled = conf.filled_classes.clone();
            let q = label_shift::predicted_distribution(target_probs, cfg.label_shift.soft)?;
            let raw = label_shift::bbse_qp(conf.matrix.view(), &q, &source_prior)?;
            let est = match &support {
                Some(keep) => label_shift::restrict_to_support(&raw, &source_prior, keep, floor),
                None => label_shift::apply_prior_floor(&raw, &source_prior, floor),
            };
            if support.is_none() && cfg.label_shift.fixed_support {
                support = Some(est.target_prior.iter().map(|&p| p > 0.0).collect());
            }
            floored = (0..c).filter(|&k| raw.target_prior[k] > 0.0 && est.target_prior[k] == 0.0).collect();
            Some(est)
        } else {
            None
        };
        let prior: Vec<f64> = match &estimate {
            Some(e) if cfg.mul.prior_weighting => e.target_prior.clone(),
            _ => source_prior.clone(),
        };

        // Confident pseudo-labels, excluding classes estimated absent from the target.
        let mut conf_idx = Vec::new();
        let mut conf_lab = Vec::new();
        for (i, row) in target_probs.rows().into_iter().enumerate() {
            let (k, p) = argmax_row(row);
            if p > cfg.mul.tau as f32 && prior[k] > 0.0 {
                conf_idx.push(i);
                conf_lab.push(k);
            }
        }
        let z_train = pass.z.slice(s![..n_train, ..]);
        let z_target = pass.z.slice(s![n_train + n_hold.., ..]);
        let zt_conf = z_target.select(Axis(0), &conf_idx);
        let yt_conf = one_hot(&conf_lab, c);

        let terms = if !is_mul {
            MulTerms::none(n_train, zt_conf.nrows(), pass.z.ncols())
        } else {
            mul_terms(&MulInputs {
            zs: z_train,
            ys: ys_onehot.view(),
            zt: zt_conf.view(),
            yt: yt_conf.view(),
            prior: &prior,
            params: cfg.mul.mcmd_params(c),
            mcmd: cfg.mul.mcmd,
            bandwidth_multiplier: cfg.mul.bandwidth_multiplier,
            lambda_tu: cfg.mul.lambda_tu,
            lambda_du: cfg.mul.lambda_du,
            use_tu: cfg.mul.use_tu,
            use_du: cfg.mul.use_du,
            du_balance: cfg.mul.du_balance,
            du_pooled,
            discrepancy: cfg.effective_discrepancy(),
        })?
        };
        let was_pooled = du_pooled;
        if let Some(v) = terms.j_du_source_only {
            du_trace.push(v);
            let w = cfg.mul.du_window;
            if du_trace.len() > w {
                let old = du_trace[du_trace.len() - 1 - w];
                if (v - old).abs() <= cfg.mul.du_stable_tol * old.abs().max(1e-12) {
                    du_pooled = true;
                }
            }
        }

        // A baseline's transfer term (`methods::baselines`): gradients on Z and the logits.
        let transfer: Option<AdaptOutput> = match baseline.as_mut() {
            Some(b) => Some(b.step(&AdaptInputs {
                zs: z_train,
                logits_s: pass.logits.slice(s![..n_train, ..]),
                ys: &y_train,
                zt: z_target,
                logits_t: pass.logits.slice(s![n_train + n_hold.., ..]),
                target_probs,
                progress: it as f64 / cfg.adapt_iters as f64,
                estimate: estimate.as_ref(),
            })?),
            None => None,
        };
        let baseline_weights = transfer.as_ref().and_then(|t| t.class_weights.as_deref());

        // Importance-weighted CE on the source training rows only.
        let weights: Vec<f32> = match (&estimate, use_iw, baseline_weights) {
            (_, _, Some(cw)) => baselines::row_weights(Some(cw), &y_train),
            (Some(e), true, _) => y_train.iter().map(|&k| e.weights[k] as f32).collect(),
            _ => uniform.clone(),
        };
        let train_logits = pass.logits.slice(s![..n_train, ..]);
        let (mut ce, mut d_train_logits, _) = if weights.iter().any(|&w| w > 0.0) {
            weighted_cross_entropy(train_logits, &y_train, &weights)
        } else {
            weighted_cross_entropy(train_logits, &y_train, &uniform)
        };
        if baseline_weights.is_some() {
            // The baselines' papers weight the CE as (1/n_s)·Σ wᵢ·CEᵢ, not as a weighted mean.
            let scale = weights.iter().map(|&w| w as f64).sum::<f64>() / n_train as f64;
            ce *= scale;
            d_train_logits.mapv_inplace(|g| g * scale as f32);
        }
        let total = match &transfer {
            _ if is_mul => ce + cfg.mul.lambda_tu * terms.j_tu - terms.lambda_du_effective * terms.j_du,
            Some(t) => ce + t.objective,
            None => ce,
        };
        let transfer_value = transfer.as_ref().map_or(0.0, |t| t.value);
        for (what, v) in [("cross-entropy", ce), ("J_TU", terms.j_tu), ("J_DU", terms.j_du), ("the transfer term", transfer_value)] {
            check_finite(what, it, Stage::Adapt, v, cfg)?;
        }

        let n_all = x_adapt.nrows();
        let mut d_logits = Array2::<f32>::zeros((n_all, c));
        d_logits.slice_mut(s![..n_train, ..]).assign(&d_train_logits);
        let mut d_z = Array2::<f32>::zeros(pass.z.raw_dim());
        d_z.slice_mut(s![..n_train, ..]).assign(&terms.grad_zs);
        let off = n_train + n_hold;
        for (r, &i) in conf_idx.iter().enumerate() {
            d_z.row_mut(off + i).assign(&terms.grad_zt.row(r));
        }
        if let Some(t) = &transfer {
            add_rows(&mut d_z, 0, &t.grad_zs);
            add_rows(&mut d_z, off, &t.grad_zt);
            if let (Some(gs), Some(gt)) = (&t.grad_logits_s, &t.grad_logits_t) {
                add_rows(&mut d_logits, 0, gs);
                add_rows(&mut d_logits, off, gt);
            }
        }
        let grads = net.backward(&pass, d_logits.view(), Some(d_z.view()));
        if !grads.is_finite() {
            let term = if transfer.as_ref().is_some_and(|t| !(all_finite(&t.grad_zs) && all_finite(&t.grad_zt))) {
                "the gradient of the baseline's transfer term with respect to Z"
            } else if !(all_finite(&terms.grad_zs) && all_finite(&terms.grad_zt)) {
                "the gradient of the kernel terms (λ_TU·J_TU − λ_DU·J_DU) with respect to Z"
            } else if !all_finite(&d_train_logits) {
                "the gradient of the cross-entropy"
            } else {
                "the gradient of the network's parameters"
            };
            return Err(Error::numerical(
                format!("Adapt iteration {it}"),
                format!("{term} is not finite: {}", divergence_advice(cfg)),
            ));
        }
        adam.step(&mut net, &grads);
        history.push(IterRecord {
            stage: Stage::Adapt,
            iter: pretrain_done + it,
            ce,
            j_tu: terms.j_tu,
            j_du: terms.j_du,
            total,
            lambda_du: terms.lambda_du_effective,
            n_confident: conf_idx.len(),
            du_pooled: was_pooled,
            temperature,
            target_prior: estimate.as_ref().map(|e| e.target_prior.clone()),
            transfer: transfer.as_ref().map(|t| TransferRecord { value: t.value, lambda: t.lambda }),
        });
        if estimate.is_some() {
            shift = estimate;
        }
        progress(Progress { done: pretrain_done + it + 1, total: total_iters, stage: Stage::Adapt, loss: total });
    }

    let stats_x = x_train.view();
    let target_probs = net.predict_proba(data.target_x, Some(stats_x));
    let holdout_probs = net.predict_proba(x_source.slice(s![n_train.., ..]), Some(stats_x));
    let source_z = net.eval_outputs(data.source_x, Some(stats_x)).0;
    let target_z = net.eval_outputs(data.target_x, Some(stats_x)).0;
    Ok(Fitted {
        network: net,
        target_probs,
        source_z,
        target_z,
        shift,
        source_prior,
        history,
        n_train,
        n_holdout: n_hold,
        confusion_filled_classes: filled,
        floored_classes: floored,
        holdout_rows: hold_idx,
        holdout_probs,
        pretraining_reused,
    })
}
