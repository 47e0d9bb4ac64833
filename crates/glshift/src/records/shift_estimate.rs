//! `glshift shift estimate`'s JSON file: every requested estimator's target prior (with its
//! bootstrap interval), the conditioning of the hold-out confusion matrices, and where the
//! probabilities came from — saved files, or a source classifier trained on a data folder.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::config::FitConfig;
use crate::label_shift::suite::{BootstrapSpec, EstimatorOutcome};
use crate::label_shift::Diagnostics;

/// The whole file.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ShiftEstimateFile {
    pub glshift_version: String,
    /// Saved probabilities or a trained classifier (their fields sit at the top level).
    #[serde(flatten)]
    pub input: EstimateInput,
    pub n_source: usize,
    pub n_target: usize,
    pub n_classes: usize,
    pub source_prior: Vec<f64>,
    /// `null` without intervals.
    pub bootstrap: Option<BootstrapSpec>,
    /// Conditioning of the hard and the soft confusion matrix of the hold-out.
    pub diagnostics: Conditioning,
    /// By estimator name (`bbse`, `mlls`, …): its estimate, or why it failed.
    pub estimators: BTreeMap<String, EstimatorOutcome>,
    /// Evaluation only, when the target's labels were given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub true_target_prior: Option<Vec<f64>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_target_prior_l1: Option<f64>,
    /// The prior guard's test on these probabilities (`prior_policy::label_shift_verdict`):
    /// whether label shift, the estimators' assumption, looks broken.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prior_guard: Option<crate::prior_policy::PriorGuard>,
}

/// Where the probabilities came from.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(untagged)]
pub enum EstimateInput {
    /// `--data`: the source classifier was trained here (once, or once per fold).
    Trained(Box<TrainedInput>),
    /// `--source-probs`, `--source-labels`, `--target-probs`.
    Saved { source_probs: PathBuf, source_labels: PathBuf, target_probs: PathBuf },
}

/// The `--data` form's fields.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct TrainedInput {
    pub data: PathBuf,
    pub source: String,
    pub target: String,
    pub source_path: String,
    pub target_path: String,
    pub n_source_train: TrainRows,
    pub n_source_holdout: usize,
    pub cross_fit: usize,
    pub classes: Vec<String>,
    pub classifier: ClassifierRecord,
}

/// Source rows each classifier trained on: one number, or one per cross-fitting fold.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum TrainRows {
    One(usize),
    PerFold(Vec<usize>),
}

impl TrainRows {
    pub fn new(per_fold: Vec<usize>) -> TrainRows {
        match per_fold.as_slice() {
            [one] => TrainRows::One(*one),
            _ => TrainRows::PerFold(per_fold),
        }
    }
}

/// The source classifier of the `--data` form.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ClassifierRecord {
    pub method: String,
    pub seed: u64,
    pub holdout_accuracy: f64,
    pub config: FitConfig,
    /// Evaluation only, when the target has labels.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_accuracy: Option<f64>,
}

/// Hard and soft confusion-matrix conditioning.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Conditioning {
    pub hard: ConditioningOutcome,
    pub soft: ConditioningOutcome,
}

/// A matrix's conditioning, or why it could not be built.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ConditioningOutcome {
    Measured(Diagnostics),
    Failed { error: String },
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(input: EstimateInput) -> ShiftEstimateFile {
        let diag = Diagnostics {
            smallest_singular_value: 0.0,
            condition_number: f64::INFINITY,
            warning: Some("singular".into()),
        };
        ShiftEstimateFile {
            glshift_version: "0".into(),
            input,
            n_source: 10,
            n_target: 8,
            n_classes: 2,
            source_prior: vec![0.5, 0.5],
            bootstrap: None,
            diagnostics: Conditioning {
                hard: ConditioningOutcome::Measured(diag),
                soft: ConditioningOutcome::Failed { error: "e".into() },
            },
            estimators: BTreeMap::from([(
                "bbse".to_string(),
                EstimatorOutcome::Failed { variant: "bbse-hard".into(), error: "singular".into() },
            )]),
            true_target_prior: Some(vec![0.25, 0.75]),
            source_target_prior_l1: Some(0.5),
            prior_guard: None,
        }
    }

    /// Written and read back: the same file again (JSON text equal), each form recognised.
    #[test]
    fn both_forms_read_back_as_written() {
        let saved = EstimateInput::Saved {
            source_probs: "sp.npy".into(),
            source_labels: "sl.npy".into(),
            target_probs: "tp.npy".into(),
        };
        let classifier = ClassifierRecord {
            method: "source".into(),
            seed: 1,
            holdout_accuracy: 0.9,
            config: FitConfig::default(),
            target_accuracy: None,
        };
        let trained = EstimateInput::Trained(Box::new(TrainedInput {
            data: "d".into(),
            source: "a".into(),
            target: "b".into(),
            source_path: "d/a".into(),
            target_path: "d/b".into(),
            n_source_train: TrainRows::new(vec![7, 8]),
            n_source_holdout: 3,
            cross_fit: 2,
            classes: vec!["x".into(), "y".into()],
            classifier,
        }));
        for input in [saved, trained] {
            let text = serde_json::to_string_pretty(&file(input)).unwrap();
            let back: ShiftEstimateFile = serde_json::from_str(&text).unwrap();
            assert_eq!(serde_json::to_string_pretty(&back).unwrap(), text);
            let cond = &back.diagnostics.hard;
            assert!(
                matches!(cond, ConditioningOutcome::Measured(d) if d.condition_number == f64::INFINITY),
                "{cond:?}"
            );
        }
        assert_eq!(TrainRows::new(vec![5]), TrainRows::One(5));
    }
}
