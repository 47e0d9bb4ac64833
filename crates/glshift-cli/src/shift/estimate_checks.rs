//! What `glshift shift estimate` reports beside the estimates: the conditioning of the
//! hold-out confusion matrices and the prior guard's test of the label-shift assumption.

use glshift::config::{MulConfig, PriorGuardConfig};
use glshift::label_shift::{confusion_diagnostics, confusion_matrix};
use glshift::prior_policy::{label_shift_verdict, DiagnosticsParams, GuardParams, PriorGuard};
use glshift::records::{Conditioning, ConditioningOutcome};
use ndarray::Array2;

/// Conditioning of the hard and soft hold-out confusion matrices.
pub(super) fn conditioning(sp: &Array2<f32>, labels: &[usize], ps: &[f64]) -> Conditioning {
    let one = |soft| match confusion_matrix(sp.view(), labels, ps, soft) {
        Ok(conf) => ConditioningOutcome::Measured(confusion_diagnostics(conf.matrix.view())),
        Err(e) => ConditioningOutcome::Failed { error: e.to_string() },
    };
    Conditioning { hard: one(false), soft: one(true) }
}

/// The prior guard's test of the label-shift assumption on the probabilities, with a fit's
/// default settings; printed, and `None` (with a warning) where it cannot run.
pub(super) fn verdict(
    hold: &Array2<f32>,
    labels: &[usize],
    target: &Array2<f32>,
    ps: &[f64],
    seed: u64,
) -> Option<PriorGuard> {
    let g = PriorGuardConfig::default();
    let params = GuardParams {
        bootstrap: DiagnosticsParams {
            tau: MulConfig::default().tau,
            soft: true,
            resamples: g.resamples,
            seed,
        },
        alpha: g.alpha,
        level: g.level,
        min_confident_share: g.min_confident_share,
        resolution: 1.0 / (4.0 * ps.len() as f64),
    };
    match label_shift_verdict(hold.view(), labels, target.view(), ps, &params) {
        Ok(v) if v.trusted => Some(v),
        Ok(v) => {
            eprintln!(
                "warning: label shift looks broken (BBSE-QP vs MLLS ℓ1 = {:.3}, p = {:.3}; confident target rows {:.3}): the estimates above are not trusted; the source proportions assume no correction (prior_guard in the output)",
                v.qp_mlls_l1, v.p_value, v.confident_share
            );
            Some(v)
        }
        Err(e) => {
            eprintln!("warning: the label-shift test could not run: {e}");
            None
        }
    }
}
