//! Scores that need target labels. Nothing in training calls this module: target labels are
//! read only here, after the model is fixed.
//!
//! [`metrics`] holds the analysis metrics of the representation Z (J_b, J_w, prototype
//! distances, per-class MCMD).

pub mod metrics;

pub use metrics::{embedding_metrics, EmbeddingMetrics, Separability};

use serde::Serialize;

use crate::{Error, Result};

/// Evaluation of predictions against true labels.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Scores {
    /// Fraction of rows predicted correctly, in [0, 1].
    pub accuracy: f64,
    /// Accuracy per class (None for a class absent from the labels).
    pub per_class_accuracy: Vec<Option<f64>>,
    /// Class proportions of the true labels.
    pub true_prior: Vec<f64>,
}

/// Compares predicted classes with true labels (both 0-based, same length).
pub fn score(predicted: &[usize], truth: &[usize], n_classes: usize) -> Result<Scores> {
    if predicted.len() != truth.len() {
        return Err(Error::Shape {
            what: "predictions vs target labels".into(),
            expected: truth.len().to_string(),
            found: predicted.len().to_string(),
        });
    }
    if truth.is_empty() {
        return Err(Error::bad_data("target labels", "no rows to score"));
    }
    if let Some(&bad) = truth.iter().chain(predicted).find(|&&y| y >= n_classes) {
        return Err(Error::bad_data("labels", format!("class {bad} out of range 0..{n_classes}")));
    }
    let mut hits = vec![0usize; n_classes];
    let mut counts = vec![0usize; n_classes];
    for (&p, &t) in predicted.iter().zip(truth) {
        counts[t] += 1;
        hits[t] += usize::from(p == t);
    }
    let n = truth.len() as f64;
    Ok(Scores {
        accuracy: hits.iter().sum::<usize>() as f64 / n,
        per_class_accuracy: hits
            .iter()
            .zip(&counts)
            .map(|(&h, &m)| (m > 0).then(|| h as f64 / m as f64))
            .collect(),
        true_prior: counts.iter().map(|&m| m as f64 / n).collect(),
    })
}

/// Mean and sample standard deviation (n − 1; 0 for a single value).
pub fn mean_std(values: &[f64]) -> (f64, f64) {
    if values.is_empty() {
        return (f64::NAN, f64::NAN);
    }
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    if values.len() == 1 {
        return (mean, 0.0);
    }
    let var = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0);
    (mean, var.sqrt())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accuracy_and_per_class_are_counted_per_true_class() {
        let s = score(&[0, 1, 1, 2], &[0, 1, 2, 2], 4).unwrap();
        assert!((s.accuracy - 0.75).abs() < 1e-12);
        assert_eq!(s.per_class_accuracy, vec![Some(1.0), Some(1.0), Some(0.5), None]);
        assert_eq!(s.true_prior, vec![0.25, 0.25, 0.5, 0.0]);
    }

    #[test]
    fn mismatched_lengths_and_out_of_range_labels_are_errors() {
        assert!(score(&[0], &[0, 1], 2).is_err());
        assert!(score(&[0, 5], &[0, 1], 2).is_err());
        assert!(score(&[], &[], 2).is_err());
    }

    #[test]
    fn mean_std_matches_hand_values() {
        let (m, s) = mean_std(&[1.0, 2.0, 3.0]);
        assert!((m - 2.0).abs() < 1e-12 && (s - 1.0).abs() < 1e-12);
        assert_eq!(mean_std(&[4.0]), (4.0, 0.0));
    }
}
