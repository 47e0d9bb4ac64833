//! The prior guard: whether the label-shift estimate of the pre-trained network may be trusted,
//! and how far the in-loop estimate may move. Inputs are rows whose labels
//! may be read — the calibrated probabilities of the labelled source hold-out (`P_h`, n_h × c,
//! labels `y_h`) and of the unlabelled target (`P_t`, n_t × c) — never a target label.
//!
//! **Agreement test.** BBSE-QP (`min ‖q − Cw‖²`, w ≥ 0, wᵀpˢ = 1) and MLLS-BCTS (EM on the
//! target likelihood) are both consistent for the target prior under label shift
//! (`P_t(x|y) = P_s(x|y)`) with a calibrated classifier; they use the classifier's outputs
//! differently (C averages them per class, EM weighs every target row by its posterior), so a
//! conditional shift moves them apart. The statistic is `D = ‖p̂_QP − p̂_MLLS‖₁`. Its null
//! distribution is drawn by a parametric bootstrap under exact label shift: each replicate
//! resamples the hold-out within each class (a new C*), draws a synthetic target of n_t rows
//! (a class from p̂_QP, then a hold-out row of that class) and recomputes D* with both
//! estimators. `p = (1 + #{D* ≥ D}) / (1 + B)`. The synthetic target reuses hold-out rows, so
//! this null is narrower than a fresh sample's; where the hold-out is classified perfectly it
//! collapses to D* = 0 and any D > 0 is "significant". A disagreement therefore counts only when
//! it is significant (`p < α`) **and** material: larger than the QP estimate's own sampling
//! uncertainty, half the summed width of its box (below), **and** larger on some class than the
//! fit's resolution, the prior floor (`max_k |p̂_QP,k − p̂_MLLS,k| > floor`: below the floor the
//! fit treats a share as zero, so two estimates closer than that on every class lead it to the
//! same prior up to what it can resolve). The first two shrink as 1/√n; the third does not, so
//! at large n a tiny but exactly measured departure from label shift (the VisDA-2017-shaped
//! synthetic task: largest class gap 0.006 under the floor 0.021) no longer distrusts the
//! estimate. A floor of 0 leaves the rule as before.
//!
//! **Confident share.** `m = #{i : max_k P_t[i, k] > τ} / n_t`, the share of target rows the
//! pre-trained network would pseudo-label (MUL's τ). J_TU and J_DU read the target through
//! these rows, and BBSE's C describes the target only as far as the network recognises it.
//! With `m` under one half, most of the target lies outside both: the regime (shallow
//! features, strong conditional shift) where the correction and the alignment rest on what the
//! network does not recognise.
//!
//! The estimate is trusted unless the disagreement counts or `m < min_confident_share` (1/2).
//!
//! **Response** ([`PriorGuard::response`]). Under the floor the fit falls back
//! (`label_shift.guard.fallback`). The default, `adapt-checked`, keeps J_TU and J_DU with
//! w ≡ 1 (p̂ᵗ = pˢ in the loop) and then checks the adapted network ([`super::adaptation_check`]:
//! the two estimators must agree at least as well, and the confident share be at least as
//! large, as on the pre-trained network, and at least 1/2); a failed check redoes the stage as
//! `source`.
//! `no-correction` keeps the adaptation unchecked; `source` drops every MUL term. A
//! disagreement with a confident network gets `on_disagreement`: `fallback` (default) answers
//! as under the floor; `no-correction` as above, unchecked; `shrink` keeps the terms with every
//! in-loop estimate pulled towards pˢ, `p ← pˢ + λ(p − pˢ)`, by the share of the correction the
//! disagreement leaves, `λ = clamp(1 − D / ‖p̂_QP − pˢ‖₁, 0, 1)`.
//!
//! **Box.** Each replicate also resamples the real target rows (with replacement) and recomputes
//! the QP on (C*, q*): the per-class percentile interval at `level`, widened to hold p̂_QP,
//! bounds where the source-only evidence puts the prior. With `cap_drift` the training loop
//! projects every later estimate onto that box (Euclidean projection onto box ∩ simplex,
//! [`project_to_box`]), so that adaptation and estimation cannot feed each other beyond what the
//! pre-trained network supports.

use crate::seeds::{stream_seed, Stream};
use ndarray::{ArrayView2, Axis};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use super::DiagnosticsParams;
use crate::label_shift::exact_shift::{
    confident_share, resample_within_class, rows_by_class, Drawable,
};
use crate::label_shift::{
    bbse_qp, confusion_matrix, l1_distance, predicted_distribution, Confusion, Mlls,
    ShiftEstimator, ShiftInputs,
};
use crate::{Error, Result};

/// Settings of [`prior_guard`].
#[derive(Clone, Copy, Debug)]
pub struct GuardParams {
    /// τ (MUL's pseudo-label threshold) of the confident share, soft or hard C and q, bootstrap
    /// replicates and seed: the same settings as the fit's diagnostics.
    pub bootstrap: DiagnosticsParams,
    /// Level of the agreement test (distrust when p < α).
    pub alpha: f64,
    /// Coverage of the box (per class).
    pub level: f64,
    /// Distrust when the share of target rows above τ is below this.
    pub min_confident_share: f64,
    /// The fit's prior floor: a disagreement counts only where it exceeds this on some class.
    pub resolution: f64,
}

/// What the guard found on the pre-trained network (`report.json` key `prior_guard`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PriorGuard {
    /// BBSE-QP and MLLS-BCTS target priors (unfloored).
    pub qp_prior: Vec<f64>,
    pub mlls_prior: Vec<f64>,
    /// D = ‖qp_prior − mlls_prior‖₁.
    pub qp_mlls_l1: f64,
    /// Median and (1 − α) quantile of D* under exact label shift.
    pub null_median: f64,
    pub null_critical: f64,
    pub p_value: f64,
    pub alpha: f64,
    /// Half the summed width of the box: the disagreement counts only above it.
    pub box_half_width: f64,
    /// max_k |qp_prior_k − mlls_prior_k|, and the resolution (the fit's prior floor) it must
    /// exceed for the disagreement to count.
    #[serde(default)]
    pub max_class_gap: f64,
    #[serde(default)]
    pub resolution: f64,
    /// Share of target rows whose top calibrated probability exceeds τ, and its floor.
    pub confident_share: f64,
    pub min_confident_share: f64,
    /// Rule 1: the two estimates disagree (p < α, D above the box half-width, and the largest
    /// class gap above the resolution). `false` in reports of builds before it was written.
    #[serde(default)]
    pub disagrees: bool,
    /// Neither a material significant disagreement nor a confidence below the floor: the
    /// label-shift correction is used.
    pub trusted: bool,
    /// Per-class box of the prior (percentile interval at `level`, widened to hold qp_prior).
    pub low: Vec<f64>,
    pub high: Vec<f64>,
    pub level: f64,
    /// Replicates that gave both D* and a box estimate.
    pub resamples: usize,
    /// λ = clamp(1 − D / ‖qp_prior − pˢ‖₁, 0, 1): the share of the correction the
    /// disagreement leaves (used by `on_disagreement = "shrink"`).
    #[serde(default)]
    pub kept_correction: f64,
}

/// What a fit does when the target is under the confident-share floor.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum GuardFallback {
    /// Adapt as `no-correction`, then keep the adaptation only where the final network passes
    /// the adaptation check ([`super::adaptation_check()`]); else redo the stage as `source`.
    #[default]
    AdaptChecked,
    /// Keep J_TU and J_DU, drop the label-shift correction (w ≡ 1, p̂ᵗ = pˢ).
    NoCorrection,
    /// Drop every MUL term too: the adaptation stage trains the source cross-entropy alone,
    /// as `source` does.
    Source,
}

/// What a fit does when only the agreement test distrusts the estimate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DisagreementResponse {
    /// As under the floor (`fallback`).
    Fallback,
    /// Keep J_TU and J_DU, w ≡ 1.
    NoCorrection,
    /// Keep J_TU and J_DU, every estimate shrunk towards pˢ by `kept_correction`.
    Shrink,
}

/// The guard's verdict turned into what the adaptation loop does.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum GuardResponse {
    /// The label-shift correction is used.
    Use,
    /// MUL's terms with w ≡ 1.
    NoCorrection,
    /// MUL's terms with estimates `pˢ + λ(p − pˢ)`.
    Shrink(f64),
    /// The source cross-entropy alone.
    Source,
}

impl PriorGuard {
    /// Fewer target rows than the floor are τ-confident (rule 2).
    pub fn low_confidence(&self) -> bool {
        self.confident_share < self.min_confident_share
    }

    /// The response to this verdict (module docs): trusted → use; under the floor →
    /// `fallback`; a disagreement alone → `on_disagreement`.
    pub fn response(
        &self,
        fallback: GuardFallback,
        on_disagreement: DisagreementResponse,
    ) -> GuardResponse {
        let fallen = match fallback {
            GuardFallback::AdaptChecked | GuardFallback::NoCorrection => {
                GuardResponse::NoCorrection
            }
            GuardFallback::Source => GuardResponse::Source,
        };
        if self.trusted {
            GuardResponse::Use
        } else if self.low_confidence() {
            fallen
        } else {
            match on_disagreement {
                DisagreementResponse::Fallback => fallen,
                DisagreementResponse::NoCorrection => GuardResponse::NoCorrection,
                DisagreementResponse::Shrink => GuardResponse::Shrink(self.kept_correction),
            }
        }
    }

    /// Whether this verdict, under these settings, sends the fit through the adaptation check:
    /// distrusted, and answered by an `adapt-checked` fallback.
    pub fn checks_adaptation(
        &self,
        fallback: GuardFallback,
        on_disagreement: DisagreementResponse,
    ) -> bool {
        !self.trusted
            && fallback == GuardFallback::AdaptChecked
            && (self.low_confidence() || on_disagreement == DisagreementResponse::Fallback)
    }

    /// One line for the fit's printed summary.
    pub fn summary(&self) -> String {
        let verdict = if self.trusted {
            "label-shift correction used"
        } else {
            "label-shift estimate not trusted: the fit adapts as label_shift.guard.fallback says (a disagreement alone: label_shift.guard.on_disagreement)"
        };
        format!(
            "prior guard: BBSE-QP vs MLLS ℓ1 = {:.3} (null median {:.3}, p = {:.3}, α = {}; box half-width {:.3}; largest class gap {:.3}, prior floor {:.3}); confident target rows {:.3} (floor {}): {verdict}",
            self.qp_mlls_l1, self.null_median, self.p_value, self.alpha, self.box_half_width, self.max_class_gap, self.resolution, self.confident_share, self.min_confident_share
        )
    }
}

/// Runs the agreement test and the box (module docs). `hold` (n_h × c) with `labels`, `target`
/// (n_t × c) are calibrated probabilities; `source_prior` pˢ (length c). Errors on bad shapes
/// or labels, or when more than half the replicates fail; never panics. Depends on `p.seed`
/// only, not on the thread count.
pub fn prior_guard(
    hold: ArrayView2<f32>,
    labels: &[usize],
    target: ArrayView2<f32>,
    source_prior: &[f64],
    p: &GuardParams,
) -> Result<PriorGuard> {
    let b = &p.bootstrap;
    if b.resamples < 2 {
        return Err(Error::param(
            "prior_guard.resamples",
            b.resamples,
            "need at least 2 bootstrap resamples",
        ));
    }
    let (qp, mlls) = both_estimates(hold, labels, target, source_prior, b.soft)?;
    let d = l1_distance(&qp, &mlls);
    let c = source_prior.len();
    let by_class = rows_by_class(labels, c);
    let drawable = Drawable::new(&by_class, &qp);
    let mut master = ChaCha8Rng::seed_from_u64(stream_seed(b.seed, Stream::Guard));
    let seeds: Vec<u64> = (0..b.resamples).map(|_| master.random()).collect();
    let reps: Vec<(f64, Vec<f64>)> = seeds
        .par_iter()
        .filter_map(|&s| {
            replicate(s, hold, labels, target, (&by_class, &drawable), source_prior, b.soft)
        })
        .collect();
    if reps.len() * 2 < b.resamples {
        return Err(Error::numerical(
            "prior guard bootstrap",
            format!("{} of {} resamples failed", b.resamples - reps.len(), b.resamples),
        ));
    }
    let mut null: Vec<f64> = reps.iter().map(|r| r.0).collect();
    null.sort_by(f64::total_cmp);
    let p_value = (1 + null.iter().filter(|&&x| x >= d).count()) as f64 / (1 + null.len()) as f64;
    let (low, high): (Vec<f64>, Vec<f64>) = (0..c)
        .map(|k| {
            let mut v: Vec<f64> = reps.iter().map(|r| r.1[k]).collect();
            v.sort_by(f64::total_cmp);
            let tail = (1.0 - p.level) / 2.0;
            (quantile(&v, tail).min(qp[k]), quantile(&v, 1.0 - tail).max(qp[k]))
        })
        .unzip();
    let box_half_width = low.iter().zip(&high).map(|(l, h): (&f64, &f64)| h - l).sum::<f64>() / 2.0;
    let confident_share = confident_share(target, b.tau);
    let max_class_gap = qp.iter().zip(&mlls).fold(0.0f64, |m, (a, b)| m.max((a - b).abs()));
    let disagrees = p_value < p.alpha && d > box_half_width && max_class_gap > p.resolution;
    let correction = l1_distance(&qp, source_prior);
    let kept_correction =
        if correction > 0.0 { (1.0 - d / correction).clamp(0.0, 1.0) } else { 0.0 };
    Ok(PriorGuard {
        kept_correction,
        box_half_width,
        max_class_gap,
        resolution: p.resolution,
        confident_share,
        min_confident_share: p.min_confident_share,
        trusted: !disagrees && confident_share >= p.min_confident_share,
        disagrees,
        qp_mlls_l1: d,
        null_median: quantile(&null, 0.5),
        null_critical: quantile(&null, 1.0 - p.alpha),
        p_value,
        alpha: p.alpha,
        qp_prior: qp,
        mlls_prior: mlls,
        low,
        high,
        level: p.level,
        resamples: null.len(),
    })
}

/// (BBSE-QP, MLLS-BCTS) target priors, unfloored.
pub(super) fn both_estimates(
    hold: ArrayView2<f32>,
    labels: &[usize],
    target: ArrayView2<f32>,
    ps: &[f64],
    soft: bool,
) -> Result<(Vec<f64>, Vec<f64>)> {
    let qp = qp_from(&confusion_matrix(hold, labels, ps, soft)?, target, ps, soft)?;
    let inputs = ShiftInputs {
        source_probs: hold,
        source_labels: labels,
        target_probs: target,
        source_prior: Some(ps),
    };
    let mlls = Mlls::default().estimate(&inputs)?.target_prior;
    Ok((qp, mlls))
}

/// BBSE-QP's target prior, unfloored, from the hold-out's confusion matrix `conf`.
fn qp_from(conf: &Confusion, target: ArrayView2<f32>, ps: &[f64], soft: bool) -> Result<Vec<f64>> {
    let q = predicted_distribution(target, soft)?;
    Ok(bbse_qp(conf.matrix.view(), &q, ps)?.target_prior)
}

/// MLLS-BCTS on a replicate: hold-out rows `rows` (drawn from `hold`, labels `labels`) and a
/// target of hold-out rows `synth`, run on their distinct rows with the times each was drawn
/// ([`ShiftEstimator::estimate_resample`]): the estimate on the drawn rows up to summation order.
/// A replicate draws each of n_t target rows from a hold-out class's rows, so at the
/// VisDA-2017 shape about half of them are distinct; there the replicates, mostly EM and BCTS,
/// took 30% of a weak network's fit (docs/performance.md, "The guard's replicates on their
/// distinct rows").
fn counted_mlls(
    hold: ArrayView2<f32>,
    labels: &[usize],
    rows: &[usize],
    synth: &[usize],
    ps: &[f64],
) -> Result<Vec<f64>> {
    let inputs = ShiftInputs {
        source_probs: hold,
        source_labels: labels,
        target_probs: hold,
        source_prior: Some(ps),
    };
    Ok(Mlls::default().estimate_resample(&inputs, rows, synth)?.target_prior)
}

/// One replicate from its own seed: (D* on a synthetic label-shift target, QP on the resampled
/// real target), or `None` when an estimate fails.
/// The synthetic target draws classes from p̂_QP (`drawable`).
fn replicate(
    seed: u64,
    hold: ArrayView2<f32>,
    labels: &[usize],
    target: ArrayView2<f32>,
    (by_class, drawable): (&[Vec<usize>], &Drawable),
    ps: &[f64],
    soft: bool,
) -> Option<(f64, Vec<f64>)> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let rows = resample_within_class(by_class, &mut rng);
    let y: Vec<usize> = rows.iter().map(|&i| labels[i]).collect();
    let h = hold.select(Axis(0), &rows);
    let n_t = target.nrows();
    let synth = drawable.target(by_class, n_t, &mut rng);
    // One confusion matrix of the resampled hold-out serves both QPs.
    let conf = confusion_matrix(h.view(), &y, ps, soft).ok()?;
    let a = qp_from(&conf, hold.select(Axis(0), &synth).view(), ps, soft).ok()?;
    let b = counted_mlls(hold, labels, &rows, &synth, ps).ok()?;
    let resampled: Vec<usize> = (0..n_t).map(|_| rng.random_range(0..n_t)).collect();
    let boxed = qp_from(&conf, target.select(Axis(0), &resampled).view(), ps, soft).ok()?;
    Some((l1_distance(&a, &b), boxed))
}

/// The `q`-quantile of sorted values (nearest rank; 0 when empty).
fn quantile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[i]
}

mod bounds;
pub use bounds::{project_to_box, shrink_towards};

#[cfg(test)]
mod tests;
