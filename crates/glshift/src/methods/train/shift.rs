//! The label-shift tracker of the adaptation loop: each iteration BBSE-QP on the network's
//! current (calibrated) probabilities gives w and p̂ᵗ (paper, eq. BBSE_QP_estimation); small
//! priors are floored to 0 (pitfall 3); with `fixed_support` the classes estimated absent at the
//! first iteration (the pre-trained network, the fixed black box BBSE assumes) stay absent and
//! only the proportions of the others are re-estimated.

use ndarray::ArrayView2;

use crate::label_shift::{self, ShiftEstimate};
use crate::methods::config::FitConfig;
use crate::Result;

pub(super) struct ShiftTracker {
    floor: f64,
    soft: bool,
    fixed_support: bool,
    support: Option<Vec<bool>>,
    /// Classes whose confusion column had no row and was filled (pitfall 1), last iteration.
    pub filled: Vec<usize>,
    /// Classes whose estimated prior fell under the floor and was set to 0, last iteration.
    pub floored: Vec<usize>,
    /// The last estimate made.
    pub last: Option<ShiftEstimate>,
}

impl ShiftTracker {
    pub fn new(cfg: &FitConfig, c: usize) -> ShiftTracker {
        ShiftTracker {
            floor: cfg.prior_floor_for(c),
            soft: cfg.label_shift.soft,
            fixed_support: cfg.label_shift.fixed_support,
            support: None,
            filled: Vec::new(),
            floored: Vec::new(),
            last: None,
        }
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
        let q = label_shift::predicted_distribution(target_probs, self.soft)?;
        let raw = label_shift::bbse_qp(conf.matrix.view(), &q, source_prior)?;
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
