//! The fit's prior policy: what a fit does with the label-shift estimators of
//! [`crate::label_shift`]. The prior guard decides whether MUL's training uses the importance
//! weights (BBSE-QP against MLLS under a bootstrap, the box of the source-only estimate, the
//! confident share; docs/safety.md); [`fit_diagnostics`] says how far a fit's correction can be
//! trusted (docs/diagnostics.md); [`FinalPrior`] is the reported target prior and
//! [`fit_prior_interval`] its 90% interval in `report.json`.
//!
//! Shapes: c classes; probabilities are n × c row-stochastic matrices; priors length c.

mod adaptation_check;
mod diagnostics;
mod estimator;
mod guard;
pub(crate) mod interval;
mod untrusted;

pub use adaptation_check::{adaptation_check, AdaptationCheck, CheckParams};
pub use diagnostics::{fit_diagnostics, DiagnosticsParams, FitDiagnostics};
pub use estimator::{FinalPrior, PriorEstimator};
pub use guard::{
    prior_guard, project_to_box, shrink_towards, DisagreementResponse, GuardFallback, GuardParams,
    GuardResponse, PriorGuard,
};
pub(crate) use interval::hull_with_report;
pub use interval::{
    fit_prior_estimate, fit_prior_interval, FinalOutputs, FitPrior, FitPriorInterval,
};
pub use untrusted::{
    label_shift_verdict, untrusted_estimate, untrusted_note, untrusted_range, widened_with_uniform,
};
