//! The label-shift tracker of the adaptation loop: each iteration BBSE-QP on the network's
//! current (calibrated) probabilities gives w and p̂ᵗ (paper, eq. BBSE_QP_estimation); small
//! priors are floored to 0 (pitfall 3); with `fixed_support` the classes estimated absent at the
//! first iteration (the pre-trained network, the fixed black box BBSE assumes) stay absent and
//! only the proportions of the others are re-estimated.
//!
//! With the prior guard (MUL, `label_shift.guard`), the first iteration also tests the
//! pre-trained network's estimate (`label_shift::guard`) and fixes the response
//! ([`PriorGuard::response`]): `NoCorrection` and `Source` replace every estimate by pˢ (w ≡ 1),
//! and `Source` also drops MUL's terms; `Shrink(λ)` replaces every raw estimate p by
//! `pˢ + λ(p − pˢ)` before the floor. Trusted, with `cap_drift`: every later raw estimate is
//! projected onto the first one's bootstrap box.

use ndarray::ArrayView2;

use crate::label_shift::{self, DiagnosticsParams, DisagreementResponse, GuardFallback, GuardParams, GuardResponse, PriorGuard, ShiftEstimate};
use crate::label_shift::{Mlls, ShiftEstimator, ShiftInputs};
use crate::methods::config::{FitConfig, LoopEstimator};
use crate::Result;

pub(super) struct ShiftTracker {
    floor: f64,
    soft: bool,
    fixed_support: bool,
    estimator: LoopEstimator,
    support: Option<Vec<bool>>,
    /// The guard's settings when it runs for this fit, and whether it caps the drift.
    guard_params: Option<(GuardParams, bool)>,
    fallback: GuardFallback,
    on_disagreement: DisagreementResponse,
    /// What the guard found at the first iteration.
    pub guard: Option<PriorGuard>,
    /// Classes whose confusion column had no row and was filled (pitfall 1), last iteration.
    pub filled: Vec<usize>,
    /// Classes whose estimated prior fell under the floor and was set to 0, last iteration.
    pub floored: Vec<usize>,
    /// The last estimate made.
    pub last: Option<ShiftEstimate>,
}

impl ShiftTracker {
    pub fn new(cfg: &FitConfig, c: usize) -> ShiftTracker {
        let g = &cfg.label_shift.guard;
        let guarded = g.enabled && cfg.method.is_mul_family() && (cfg.mul.importance_weighting || cfg.mul.prior_weighting);
        let bootstrap = DiagnosticsParams { tau: cfg.mul.tau, soft: cfg.label_shift.soft, resamples: g.resamples, seed: cfg.seed };
        let params = GuardParams { bootstrap, alpha: g.alpha, level: g.level, min_confident_share: g.min_confident_share };
        ShiftTracker {
            floor: cfg.prior_floor_for(c),
            soft: cfg.label_shift.soft,
            fixed_support: cfg.label_shift.fixed_support,
            estimator: cfg.label_shift.loop_estimator,
            support: None,
            guard_params: guarded.then_some((params, g.cap_drift)),
            fallback: g.fallback,
            on_disagreement: g.on_disagreement,
            guard: None,
            filled: Vec::new(),
            floored: Vec::new(),
            last: None,
        }
    }

    /// What the loop does with the guard's verdict (`Use` before the guard ran or without it).
    pub fn response(&self) -> GuardResponse {
        self.guard.as_ref().map_or(GuardResponse::Use, |g| g.response(self.fallback, self.on_disagreement))
    }

    /// The response is the `source` fallback: the method adds nothing.
    pub fn source_fallback(&self) -> bool {
        self.response() == GuardResponse::Source
    }

    /// One estimate from labelled source probabilities (`conf_probs`, n × c, with `conf_labels`)
    /// for the confusion matrix and the target probabilities (n_t × c).
    pub fn update(
        &mut self,
        conf_probs: ArrayView2<f32>,
        conf_labels: &[usize],
        target_probs: ArrayView2<f32>,
        source_prior: &[f64],
    ) -> Result<ShiftEstimate> {
        let conf = label_shift::confusion_matrix(conf_probs, conf_labels, source_prior, self.soft)?;
        self.filled = conf.filled_classes.clone();
        let mut raw = match self.estimator {
            LoopEstimator::BbseQp => {
                let q = label_shift::predicted_distribution(target_probs, self.soft)?;
                label_shift::bbse_qp(conf.matrix.view(), &q, source_prior)?
            }
            LoopEstimator::Mlls => {
                let inputs = ShiftInputs { source_probs: conf_probs, source_labels: conf_labels, target_probs, source_prior: Some(source_prior) };
                Mlls::default().estimate(&inputs)?
            }
        };
        if let (Some((params, _)), None) = (&self.guard_params, &self.guard) {
            self.guard = Some(label_shift::prior_guard(conf_probs, conf_labels, target_probs, source_prior, params)?);
        }
        if let (Some(g), Some((_, cap))) = (&self.guard, &self.guard_params) {
            match self.response() {
                GuardResponse::NoCorrection | GuardResponse::Source => {
                    let est = no_correction(&raw, source_prior);
                    self.floored.clear();
                    self.last = Some(est.clone());
                    return Ok(est);
                }
                GuardResponse::Shrink(lambda) => {
                    raw.target_prior = label_shift::shrink_towards(&raw.target_prior, source_prior, lambda);
                    raw.weights = ratio(&raw.target_prior, source_prior);
                }
                GuardResponse::Use if *cap => {
                    raw.target_prior = label_shift::project_to_box(&raw.target_prior, &g.low, &g.high);
                    raw.weights = ratio(&raw.target_prior, source_prior);
                }
                GuardResponse::Use => {}
            }
        }
        let est = match &self.support {
            Some(keep) => label_shift::restrict_to_support(&raw, source_prior, keep, self.floor),
            None => label_shift::apply_prior_floor(&raw, source_prior, self.floor),
        };
        if self.support.is_none() && self.fixed_support {
            self.support = Some(est.target_prior.iter().map(|&p| p > 0.0).collect());
        }
        let c = raw.target_prior.len();
        self.floored = (0..c).filter(|&k| raw.target_prior[k] > 0.0 && est.target_prior[k] == 0.0).collect();
        self.last = Some(est.clone());
        Ok(est)
    }
}

/// The estimate that corrects nothing: p̂ᵗ = pˢ, w = 1 (0 for a class the source lacks).
fn no_correction(raw: &ShiftEstimate, source_prior: &[f64]) -> ShiftEstimate {
    let weights = source_prior.iter().map(|&p| if p > 0.0 { 1.0 } else { 0.0 }).collect();
    let mut warnings = raw.warnings.clone();
    warnings.push("prior guard: estimate not trusted, no label-shift correction".into());
    ShiftEstimate { weights, target_prior: source_prior.to_vec(), warnings, ..raw.clone() }
}

/// w_k = p_k / pˢ_k (0 where pˢ_k = 0).
fn ratio(prior: &[f64], source_prior: &[f64]) -> Vec<f64> {
    prior.iter().zip(source_prior).map(|(&p, &s)| if s > 0.0 { p / s } else { 0.0 }).collect()
}
