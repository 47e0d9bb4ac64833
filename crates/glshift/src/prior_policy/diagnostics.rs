//! How much to trust a fit's label-shift correction, from rows whose labels may be read: the
//! labelled source hold-out (probabilities `P_h`, n_h × c, labels `y_h`) and the unlabelled
//! target (probabilities `P_t`, n_t × c), both from the final network. No target label is an
//! input.
//!
//! Both probability sets are first temperature-scaled on the hold-out (as the training loop
//! does). Then, with `C` the confusion matrix of [`confusion_matrix`] and `q` the target's
//! predicted distribution:
//!
//! - **agreement**: `‖p̂ᵗ_QP − p̂ᵗ_MLLS‖₁` between BBSE-QP (`min ‖q − Cw‖²`, w ≥ 0, wᵀpˢ = 1)
//!   and MLLS-BCTS (EM on the target likelihood). Under label shift with a calibrated
//!   classifier both estimate the same prior; a large gap means one of them is off;
//! - **conditioning**: κ(C) and σ_min(C) ([`confusion_diagnostics`]);
//! - **confident share**: the share of target rows whose top probability exceeds τ;
//! - **label-shift residual**: `r = ‖q − C ŵ‖₂`. Under pure label shift
//!   (`P_t(x|y) = P_s(x|y)`), `q = C w` holds in the population: `q` lies in the cone of C's
//!   columns, and `r` is only sampling noise. Its null distribution is drawn by a parametric
//!   bootstrap: each replicate resamples the hold-out within each class (a new C*), draws a
//!   synthetic target of n_t rows by picking a class from p̂ᵗ_QP and then a hold-out row of
//!   that class (a target that satisfies label shift exactly), and recomputes r* with its own
//!   QP. `p = (1 + #{r* ≥ r}) / (1 + B)`; a small p is evidence against the assumption.

use crate::seeds::{stream_seed, Stream};
use ndarray::{Array2, ArrayView2, Axis};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::label_shift::exact_shift::{
    confident_share, resample_within_class, rows_by_class, Drawable,
};
use crate::label_shift::{
    bbse_qp, confusion_diagnostics, confusion_matrix, fit_temperature, l1_distance,
    predicted_distribution, softmax_with_temperature, Mlls, ShiftEstimate, ShiftEstimator,
    ShiftInputs,
};
use crate::{Error, Result};

/// Settings of [`fit_diagnostics`].
#[derive(Clone, Copy, Debug)]
pub struct DiagnosticsParams {
    /// Confidence threshold for the confident share (MUL's τ).
    pub tau: f64,
    /// Soft (probabilities) or hard (argmax) C and q, as the fit used.
    pub soft: bool,
    /// Bootstrap replicates of the residual's null distribution.
    pub resamples: usize,
    pub seed: u64,
}

/// Label-free diagnostics of a fit (`report.json` key `diagnostics`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FitDiagnostics {
    /// BBSE-QP target prior from the final network (no floor).
    pub bbse_qp_prior: Vec<f64>,
    /// MLLS-BCTS target prior from the final network.
    pub mlls_prior: Vec<f64>,
    /// ‖bbse_qp_prior − mlls_prior‖₁.
    pub qp_mlls_l1: f64,
    /// κ(C) (`null` in JSON when C is singular).
    pub confusion_condition_number: Option<f64>,
    pub confusion_smallest_singular_value: f64,
    /// Share of target rows with top (calibrated) probability above τ.
    pub confident_target_share: f64,
    /// Temperature fitted on the hold-out before everything above.
    pub temperature: f64,
    /// r = ‖q − C ŵ‖₂ of the QP.
    pub label_shift_residual: f64,
    /// Median of r* under the bootstrap null of exact label shift.
    pub residual_null_median: f64,
    /// (1 + #{r* ≥ r}) / (1 + B): small values are evidence against label shift.
    pub label_shift_p_value: f64,
    pub resamples: usize,
    /// Conditioning warnings and dropped replicates.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

impl FitDiagnostics {
    /// Below this p-value the summary calls the label-shift assumption doubtful.
    pub const P_DOUBT: f64 = 0.05;

    /// A few human-readable lines (printed by `glshift fit`, shown by `glshift report`).
    pub fn summary_lines(&self) -> Vec<String> {
        let verdict = if self.label_shift_p_value < Self::P_DOUBT {
            "evidence against pure label shift: treat the estimated prior and weights with care"
        } else {
            "no evidence against pure label shift"
        };
        let kappa = self
            .confusion_condition_number
            .map_or("∞ (singular)".to_string(), |k| format!("{k:.1}"));
        let mut lines = vec![
            format!(
                "BBSE-QP vs MLLS target prior: ℓ1 = {:.3}; κ(C) = {kappa}; confident target rows: {:.1}%",
                self.qp_mlls_l1,
                100.0 * self.confident_target_share
            ),
            format!(
                "label-shift residual ‖q − Cŵ‖ = {:.4} (null median {:.4}, p = {:.3}, {} resamples): {verdict}",
                self.label_shift_residual, self.residual_null_median, self.label_shift_p_value, self.resamples
            ),
        ];
        lines.extend(self.warnings.iter().map(|w| format!("diagnostics warning: {w}")));
        lines
    }
}

/// Computes [`FitDiagnostics`]: `holdout_probs` (n_h × c) with `holdout_labels`,
/// `target_probs` (n_t × c), `source_prior` pˢ (length c). Errors on inconsistent shapes or
/// labels, never panics; results depend on `seed` only, not on the thread count.
pub fn fit_diagnostics(
    holdout_probs: ArrayView2<f32>,
    holdout_labels: &[usize],
    target_probs: ArrayView2<f32>,
    source_prior: &[f64],
    p: &DiagnosticsParams,
) -> Result<FitDiagnostics> {
    if p.resamples < 2 {
        return Err(Error::param("resamples", p.resamples, "need at least 2 bootstrap resamples"));
    }
    let temperature = fit_temperature(log_probs(holdout_probs).view(), holdout_labels)?;
    let hold = recalibrate(holdout_probs, temperature);
    let target = recalibrate(target_probs, temperature);
    let conf = confusion_matrix(hold.view(), holdout_labels, source_prior, p.soft)?;
    let q = predicted_distribution(target.view(), p.soft)?;
    let qp = bbse_qp(conf.matrix.view(), &q, source_prior)?;
    let residual = qp_residual(&qp)?;
    let mlls = Mlls::default().estimate(&ShiftInputs {
        source_probs: holdout_probs,
        source_labels: holdout_labels,
        target_probs,
        source_prior: Some(source_prior),
    })?;
    let cond = confusion_diagnostics(conf.matrix.view());
    let mut warnings: Vec<String> = cond.warning.iter().cloned().collect();
    let null = null_residuals(
        hold.view(),
        holdout_labels,
        &qp.target_prior,
        source_prior,
        target.nrows(),
        p,
    );
    let failed = p.resamples - null.len();
    if failed * 2 > p.resamples {
        return Err(Error::numerical(
            "label-shift residual bootstrap",
            format!("{failed} of {} resamples failed", p.resamples),
        ));
    }
    if failed > 0 {
        warnings.push(format!(
            "{failed} of {} residual bootstrap resamples failed and were dropped",
            p.resamples
        ));
    }
    let exceed = null.iter().filter(|&&r| r >= residual).count();
    let mut sorted = null.clone();
    sorted.sort_by(f64::total_cmp);
    Ok(FitDiagnostics {
        qp_mlls_l1: l1_distance(&qp.target_prior, &mlls.target_prior),
        bbse_qp_prior: qp.target_prior,
        mlls_prior: mlls.target_prior,
        confusion_condition_number: cond
            .condition_number
            .is_finite()
            .then_some(cond.condition_number),
        confusion_smallest_singular_value: cond.smallest_singular_value,
        confident_target_share: confident_share(target.view(), p.tau),
        temperature,
        label_shift_residual: residual,
        residual_null_median: sorted[sorted.len() / 2],
        label_shift_p_value: (1 + exceed) as f64 / (1 + null.len()) as f64,
        resamples: null.len(),
        warnings,
    })
}

/// r* of `p.resamples` replicates under exact label shift (see the module docs); replicates
/// whose QP fails are dropped. Replicate `b` uses its own ChaCha8 stream from `p.seed`.
fn null_residuals(
    hold: ArrayView2<f32>,
    labels: &[usize],
    target_prior: &[f64],
    source_prior: &[f64],
    n_target: usize,
    p: &DiagnosticsParams,
) -> Vec<f64> {
    let by_class = rows_by_class(labels, source_prior.len());
    let drawable = Drawable::new(&by_class, target_prior);
    let mut master = ChaCha8Rng::seed_from_u64(stream_seed(p.seed, Stream::Diagnostics));
    let seeds: Vec<u64> = (0..p.resamples).map(|_| master.random()).collect();
    let soft = p.soft;
    seeds
        .par_iter()
        .map(|&s| -> Option<f64> {
            let mut rng = ChaCha8Rng::seed_from_u64(s);
            let rows = resample_within_class(&by_class, &mut rng);
            let y: Vec<usize> = rows.iter().map(|&i| labels[i]).collect();
            let conf = confusion_matrix(hold.select(Axis(0), &rows).view(), &y, source_prior, soft)
                .ok()?;
            let synth = drawable.target(&by_class, n_target, &mut rng);
            let q = predicted_distribution(hold.select(Axis(0), &synth).view(), soft).ok()?;
            let est = bbse_qp(conf.matrix.view(), &q, source_prior).ok()?;
            qp_residual(&est).ok()
        })
        .collect::<Vec<_>>()
        .into_iter()
        .flatten()
        .collect()
}

/// ln p with a floor, as logits (softmax of them gives p back).
fn log_probs(p: ArrayView2<f32>) -> Array2<f32> {
    p.mapv(|v| v.max(1e-30).ln())
}

/// The hold-out (n_h × c, labels `labels`) and target (n_t × c) probabilities, both
/// temperature-scaled by the temperature fitted on the hold-out (as the training loop reads
/// them).
pub(super) fn recalibrate_on_holdout(
    holdout_probs: ArrayView2<f32>,
    labels: &[usize],
    target_probs: ArrayView2<f32>,
) -> Result<(Array2<f32>, Array2<f32>)> {
    let temperature = fit_temperature(log_probs(holdout_probs).view(), labels)?;
    Ok((recalibrate(holdout_probs, temperature), recalibrate(target_probs, temperature)))
}

/// softmax(ln p / T).
fn recalibrate(p: ArrayView2<f32>, temperature: f64) -> Array2<f32> {
    softmax_with_temperature(log_probs(p).view(), temperature)
}

/// ‖q − C ŵ‖ from the BBSE-QP solution (the solver always reports its objective ‖q − C ŵ‖²).
fn qp_residual(est: &ShiftEstimate) -> Result<f64> {
    let objective = est
        .objective
        .ok_or_else(|| Error::numerical("label-shift residual", "BBSE-QP returned no objective"))?;
    Ok(objective.max(0.0).sqrt())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::label_shift::test_support::{draw, rows};
    use ndarray::Array2;

    fn params() -> DiagnosticsParams {
        DiagnosticsParams { tau: 0.9, soft: true, resamples: 199, seed: 3 }
    }

    #[test]
    fn pure_label_shift_gives_a_small_residual_and_no_evidence_against_it() {
        for seed in 0..3 {
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            let yh = draw([150, 150, 150]);
            let yt = draw([400, 100, 300]);
            let hold = rows(&yh, [2.5; 3], &mut rng);
            let target = rows(&yt, [2.5; 3], &mut rng);
            let d = fit_diagnostics(hold.view(), &yh, target.view(), &[1.0 / 3.0; 3], &params())
                .unwrap();
            assert!(d.label_shift_residual < 0.05, "seed {seed}: {d:?}");
            assert!(d.label_shift_p_value > 0.01, "seed {seed}: {d:?}");
            assert!(
                d.qp_mlls_l1 < 0.15,
                "both estimators agree on {:?}: {d:?}",
                [0.5, 0.125, 0.375]
            );
            assert!((d.bbse_qp_prior[0] - 0.5).abs() < 0.08, "{d:?}");
        }
    }

    #[test]
    fn conditional_shift_outside_the_cone_is_flagged() {
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let yh = draw([150, 150, 150]);
        let hold = rows(&yh, [1.5; 3], &mut rng);
        // The target's rows look far more like their class than any source row does: no
        // mixture of the source conditionals gives their predictions (q outside C's cone).
        let yt = draw([300, 0, 100]);
        let target = rows(&yt, [8.0; 3], &mut rng);
        let d =
            fit_diagnostics(hold.view(), &yh, target.view(), &[1.0 / 3.0; 3], &params()).unwrap();
        assert!(d.label_shift_residual > 5.0 * d.residual_null_median, "{d:?}");
        assert_eq!(d.label_shift_p_value, 1.0 / 200.0, "{d:?}");
    }

    #[test]
    fn confident_share_conditioning_and_thread_independence() {
        let mut rng = ChaCha8Rng::seed_from_u64(4);
        let yh = draw([100, 100, 100]);
        let hold = rows(&yh, [1.0, 1.0, 6.0], &mut rng);
        let target = rows(&draw([10, 10, 80]), [1.0, 1.0, 6.0], &mut rng);
        let run = |threads| {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
            pool.install(|| {
                fit_diagnostics(hold.view(), &yh, target.view(), &[1.0 / 3.0; 3], &params())
                    .unwrap()
            })
        };
        let (one, four) = (run(1), run(4));
        assert_eq!(one, four);
        // Class-2 rows (80 of 100) are the confident ones; classes 0 and 1 rarely reach τ.
        assert!(one.confident_target_share > 0.5 && one.confident_target_share < 0.9, "{one:?}");
        assert!(
            one.confusion_condition_number.is_some_and(|k| k > 1.0 && k.is_finite()),
            "{one:?}"
        );
        assert_eq!(one.resamples, 199);
    }

    #[test]
    fn bad_inputs_are_errors_not_panics() {
        let hold = Array2::<f32>::from_elem((4, 3), 1.0 / 3.0);
        let p = params();
        assert!(fit_diagnostics(hold.view(), &[0, 1, 2], hold.view(), &[1.0 / 3.0; 3], &p).is_err());
        assert!(
            fit_diagnostics(hold.view(), &[0, 1, 2, 7], hold.view(), &[1.0 / 3.0; 3], &p).is_err()
        );
        let few = DiagnosticsParams { resamples: 1, ..p };
        assert!(fit_diagnostics(hold.view(), &[0, 1, 2, 0], hold.view(), &[1.0 / 3.0; 3], &few)
            .is_err());
    }
}
