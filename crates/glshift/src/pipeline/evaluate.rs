//! The final score of a run against the target labels (evaluation only): accuracy, per-class
//! accuracy, the estimated prior's ℓ1 error and the embedding metrics. Kept apart from
//! training so that a caller can score a run only after every choice is made (`select`).

use super::{argmax_rows, Evaluation, RunOutput};
use crate::{eval, label_shift, Error, Result};

impl RunOutput {
    /// Scores the run against the true target labels `truth` (one per target row) and fills
    /// the report's evaluation fields; `target_labels` keeps `truth` for the figures. Nothing
    /// that training produced changes.
    pub fn evaluate(&mut self, truth: &[usize]) -> Result<()> {
        let c = self.report.classes.len();
        if truth.len() != self.target_probs.nrows() {
            return Err(Error::Shape {
                what: "target labels to score".into(),
                expected: format!("{} labels", self.target_probs.nrows()),
                found: truth.len().to_string(),
            });
        }
        let r = &mut self.report;
        let metrics = eval::embedding_metrics(
            self.source_z.view(),
            &self.source_labels,
            self.target_z.view(),
            truth,
            c,
            &r.config.mul.mcmd_params(c),
        )?;
        let s = eval::score(&argmax_rows(&self.target_probs), truth, c)?;
        let e = Evaluation {
            prior_l1_error: r
                .estimated_target_prior
                .as_ref()
                .map(|p| label_shift::l1_distance(p, &s.true_prior)),
            source_target_prior_l1: label_shift::l1_distance(&r.source_prior, &s.true_prior),
            target_accuracy: s.accuracy,
            per_class_accuracy: s.per_class_accuracy,
            true_target_prior: s.true_prior,
        };
        r.target_accuracy = Some(e.target_accuracy);
        r.per_class_accuracy = Some(e.per_class_accuracy);
        r.true_target_prior = Some(e.true_target_prior);
        r.prior_l1_error = e.prior_l1_error;
        r.source_target_prior_l1 = Some(e.source_target_prior_l1);
        r.embedding_metrics = Some(metrics);
        self.target_labels = Some(truth.to_vec());
        Ok(())
    }
}
