//! The label-shift tracker of the adaptation loop: each iteration BBSE-QP on the network's
//! current (calibrated) probabilities gives w and p̂ᵗ (paper, eq. BBSE_QP_estimation); small
//! priors are floored to 0 (pitfall 3: under 1/(4c), raised on a small target by
//! [`LoopFloor`]), each iteration on its own estimate (MUL's default); with
//! a fixed support (the IW baselines' default) the classes estimated absent at the first
//! iteration (the pre-trained network, the fixed black box BBSE assumes) stay absent and only
//! the proportions of the others are re-estimated.
//!
//! With the prior guard (MUL, `label_shift.guard`), the first iteration also tests the
//! pre-trained network's estimate (`label_shift::guard`) and fixes the response
//! ([`PriorGuard::response`]): `NoCorrection` and `Source` replace every estimate by pˢ (w ≡ 1),
//! and `Source` also drops MUL's terms; `Shrink(λ)` replaces every raw estimate p by
//! `pˢ + λ(p − pˢ)` before the floor. Trusted, with `cap_drift`: every later raw estimate is
//! projected onto the first one's bootstrap box.

use ndarray::ArrayView2;

use crate::config::{FitConfig, LoopEstimator, LoopFloor, SupportFrom};
use crate::label_shift::{self, ShiftEstimate};
use crate::label_shift::{Mlls, ShiftEstimator, ShiftInputs};
use crate::prior_policy;
use crate::prior_policy::{
    DiagnosticsParams, DisagreementResponse, GuardFallback, GuardParams, GuardResponse, PriorGuard,
};
use crate::Result;

pub(super) struct ShiftTracker {
    floor: LoopFloor,
    soft: bool,
    fixed_support: bool,
    estimator: LoopEstimator,
    support_from: SupportFrom,
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
        let guarded = g.enabled
            && cfg.method.is_mul_family()
            && (cfg.mul.importance_weighting || cfg.mul.prior_weighting);
        let bootstrap = DiagnosticsParams {
            tau: cfg.mul.tau,
            soft: cfg.label_shift.soft,
            resamples: g.resamples,
            seed: cfg.seed,
        };
        let floor = cfg.loop_floor_for(c);
        let params = GuardParams {
            bootstrap,
            alpha: g.alpha,
            level: g.level,
            min_confident_share: g.min_confident_share,
            resolution: floor.base,
        };
        ShiftTracker {
            floor,
            soft: cfg.label_shift.soft,
            fixed_support: cfg.label_shift.fixed_support_for(cfg.method),
            estimator: cfg.label_shift.loop_estimator,
            support_from: cfg.label_shift.support_from,
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
        self.guard
            .as_ref()
            .map_or(GuardResponse::Use, |g| g.response(self.fallback, self.on_disagreement))
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
                let inputs = ShiftInputs {
                    source_probs: conf_probs,
                    source_labels: conf_labels,
                    target_probs,
                    source_prior: Some(source_prior),
                };
                Mlls::default().estimate(&inputs)?
            }
        };
        if let (Some((params, _)), None) = (&self.guard_params, &self.guard) {
            self.guard = Some(prior_policy::prior_guard(
                conf_probs,
                conf_labels,
                target_probs,
                source_prior,
                params,
            )?);
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
                    raw.target_prior =
                        prior_policy::shrink_towards(&raw.target_prior, source_prior, lambda);
                    raw.weights = ratio(&raw.target_prior, source_prior);
                }
                GuardResponse::Use if *cap => {
                    raw.target_prior =
                        prior_policy::project_to_box(&raw.target_prior, &g.low, &g.high);
                    raw.weights = ratio(&raw.target_prior, source_prior);
                }
                GuardResponse::Use => {}
            }
        }
        let floor = self.floor.at(target_probs.nrows());
        let mut est = match &self.support {
            Some(keep) => label_shift::restrict_to_support(&raw, source_prior, keep, floor),
            None => label_shift::apply_prior_floor(&raw, source_prior, floor),
        };
        if self.support.is_none() && self.fixed_support {
            let mut keep: Vec<bool> = est.target_prior.iter().map(|&p| p > 0.0).collect();
            if self.keep_mlls_support(&mut keep) {
                est = label_shift::restrict_to_support(&raw, source_prior, &keep, floor);
            }
            self.support = Some(keep);
        }
        let c = raw.target_prior.len();
        self.floored =
            (0..c).filter(|&k| raw.target_prior[k] > 0.0 && est.target_prior[k] == 0.0).collect();
        self.last = Some(est.clone());
        Ok(est)
    }

    /// With `support_from = "either"` and the guard's first estimates: adds to `keep` every
    /// class the guard's MLLS estimate puts at the floor or above; whether any was added.
    fn keep_mlls_support(&self, keep: &mut [bool]) -> bool {
        let (SupportFrom::Either, Some(g)) = (self.support_from, &self.guard) else { return false };
        let mut added = false;
        for (k, &p) in g.mlls_prior.iter().enumerate().take(keep.len()) {
            if !keep[k] && p >= self.floor.base {
                keep[k] = true;
                added = true;
            }
        }
        added
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

#[cfg(test)]
mod support_tests {
    use super::*;

    fn guard(mlls: &[f64]) -> PriorGuard {
        let c = mlls.len();
        PriorGuard {
            qp_prior: vec![1.0 / c as f64; c],
            mlls_prior: mlls.to_vec(),
            qp_mlls_l1: 0.0,
            null_median: 0.0,
            null_critical: 0.0,
            p_value: 1.0,
            alpha: 0.05,
            box_half_width: 0.0,
            max_class_gap: 0.0,
            resolution: 0.0,
            confident_share: 1.0,
            min_confident_share: 0.5,
            disagrees: false,
            trusted: true,
            low: vec![0.0; c],
            high: vec![1.0; c],
            level: 0.9,
            resamples: 2,
            kept_correction: 1.0,
        }
    }

    /// `either` keeps a class the loop's estimate floored when the guard's MLLS puts it at the
    /// floor or above, and nothing else; the default and an unguarded fit add nothing.
    #[test]
    fn either_adds_only_the_classes_mlls_puts_at_the_floor_or_above() {
        let mut cfg = FitConfig::default();
        cfg.label_shift.support_from = SupportFrom::Either;
        let mut t = ShiftTracker::new(&cfg, 4);
        let floor = t.floor.base;
        let mut keep = vec![true, false, false, false];
        assert!(!t.keep_mlls_support(&mut keep), "no guard ran: nothing to add");
        t.guard = Some(guard(&[0.5, floor, floor * 0.99, 0.3]));
        assert!(t.keep_mlls_support(&mut keep));
        assert_eq!(keep, [true, true, false, true]);
        let mut default = ShiftTracker::new(&FitConfig::default(), 4);
        default.guard = t.guard.clone();
        let mut keep = vec![true, false, false, false];
        assert!(!default.keep_mlls_support(&mut keep));
        assert_eq!(keep, [true, false, false, false]);
    }

    /// One-hot rows of `counts[k]` rows per class k (`Σcounts × c`).
    fn one_hot(counts: &[usize]) -> ndarray::Array2<f32> {
        let labels: Vec<usize> =
            counts.iter().enumerate().flat_map(|(k, &n)| std::iter::repeat_n(k, n)).collect();
        ndarray::Array2::from_shape_fn((labels.len(), counts.len()), |(i, k)| {
            f32::from(u8::from(labels[i] == k))
        })
    }

    /// By default a class floored at the first iteration comes back once its estimate clears
    /// the floor; with `fixed_support` it stays out. A perfectly classified hold-out makes
    /// BBSE-QP return the target's predicted distribution.
    #[test]
    fn a_class_floored_first_comes_back_unless_the_support_is_fixed() {
        let (hold, labels) = (one_hot(&[2, 2, 2, 2]), [0, 0, 1, 1, 2, 2, 3, 3]);
        let ps = [0.25; 4];
        let (first, later) = (one_hot(&[40, 30, 29, 1]), one_hot(&[25, 25, 25, 25]));
        for fixed in [false, true] {
            let mut cfg = FitConfig::default();
            cfg.label_shift.fixed_support = Some(fixed);
            cfg.label_shift.guard.enabled = false;
            let mut t = ShiftTracker::new(&cfg, 4);
            let a = t.update(hold.view(), &labels, first.view(), &ps).unwrap();
            assert_eq!(
                (a.target_prior[3], t.floored.clone()),
                (0.0, vec![3]),
                "0.01 is under the floor 1/16"
            );
            let b = t.update(hold.view(), &labels, later.view(), &ps).unwrap();
            assert_eq!(
                b.target_prior[3] > 0.2,
                !fixed,
                "fixed support {fixed}: {:?}",
                b.target_prior
            );
            assert!((b.target_prior.iter().sum::<f64>() - 1.0).abs() < 1e-9);
        }
    }

    /// A class holding fewer target rows than ln(1/α) (3.0 at α = 0.05) is floored though its
    /// share clears 1/(4c); the same share of ten times the rows is kept, and so is the class
    /// when a floor is given (it applies as given).
    #[test]
    fn a_class_of_fewer_rows_than_the_evidence_floor_is_floored() {
        use crate::config::evidence_floor;
        let hold = one_hot(&[2; 10]);
        let labels: Vec<usize> = (0..10).flat_map(|k| [k, k]).collect();
        let ps = [0.1; 10];
        assert!((evidence_floor(68, 0.05) - 20f64.ln() / 68.0).abs() < 1e-15);
        assert_eq!(
            (evidence_floor(0, 0.05), evidence_floor(68, 0.0), evidence_floor(68, 1.0)),
            (0.0, 0.0, 0.0)
        );
        for (scale, given, floored) in [(1, None, true), (10, None, false), (1, Some(0.025), false)]
        {
            let counts: Vec<usize> =
                [20, 20, 14, 12, 2, 0, 0, 0, 0, 0].iter().map(|n| n * scale).collect();
            let mut cfg = FitConfig::default();
            cfg.label_shift.guard.enabled = false;
            cfg.label_shift.prior_floor = given;
            let mut t = ShiftTracker::new(&cfg, 10);
            let est = t.update(hold.view(), &labels, one_hot(&counts).view(), &ps).unwrap();
            assert!(2.0 / 68.0 > t.floor.base, "the share clears 1/(4c)");
            assert_eq!(
                est.target_prior[4] == 0.0,
                floored,
                "{scale}× rows, floor {given:?}: {:?}",
                est.target_prior
            );
            assert_eq!(t.floored.contains(&4), floored, "{:?}", t.floored);
        }
    }

    /// Unset, the support is re-decided for the MUL family and fixed for the IW baselines; a
    /// value given applies to every method.
    #[test]
    fn the_support_rule_defaults_by_method_and_a_given_value_wins() {
        use crate::config::MethodKind;
        let mut cfg = FitConfig::default();
        assert_eq!(cfg.label_shift.fixed_support, None);
        for (m, fixed) in [
            (MethodKind::Mul, false),
            (MethodKind::MmdClasswise, false),
            (MethodKind::IwDann, true),
            (MethodKind::IwCdan, true),
        ] {
            assert_eq!(cfg.label_shift.fixed_support_for(m), fixed, "{m:?}");
        }
        for given in [true, false] {
            cfg.label_shift.fixed_support = Some(given);
            assert!([MethodKind::Mul, MethodKind::IwDann]
                .iter()
                .all(|&m| cfg.label_shift.fixed_support_for(m) == given));
        }
        assert!(
            !toml::to_string(&FitConfig::default()).unwrap().contains("fixed_support"),
            "absent from written configs when unset"
        );
    }

    /// The option is written to a config only when set, so records of earlier builds match.
    #[test]
    fn the_default_support_rule_is_absent_from_written_configs() {
        let text = toml::to_string(&FitConfig::default()).unwrap();
        assert!(!text.contains("support_from"), "{text}");
        let mut cfg = FitConfig::default();
        cfg.label_shift.support_from = SupportFrom::Either;
        let text = toml::to_string(&cfg).unwrap();
        assert!(text.contains("support_from = \"either\""), "{text}");
        let back: FitConfig = toml::from_str(&text).unwrap();
        assert_eq!(back.label_shift.support_from, SupportFrom::Either);
    }
}
