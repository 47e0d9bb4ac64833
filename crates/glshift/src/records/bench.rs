//! One finished run of a bench grid: the entries of `results.json` and the resumable files
//! `runs/*.json`, written by `glshift_experiments::grid` and read back by it (resume) and by
//! `glshift_report::bench`.

use serde::{Deserialize, Serialize};

/// One run of a (task, method or variant, seed) grid. Reading is lenient with files of older
/// versions: only the identifying fields and the accuracy are required.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BenchRecord {
    pub method: String,
    pub setting: String,
    pub source: String,
    pub target: String,
    pub seed: u64,
    pub target_accuracy: f64,
    #[serde(default)]
    pub prior_l1_error: Option<f64>,
    /// ‖pˢ − pᵗ‖₁ of the task; written as `null` when unknown (files of older versions wrote a
    /// NaN, which JSON also holds as `null`).
    #[serde(default)]
    pub source_target_prior_l1: Option<f64>,
    /// Share of the classes whose true target prior lies in the reported 90% interval of the
    /// estimate (evaluation only; absent without an interval or target labels).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prior_interval_coverage: Option<f64>,
    /// The fit reported its prior as not trusted (`report.json →
    /// estimated_target_prior_untrusted`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub prior_untrusted: bool,
    #[serde(default)]
    pub source_class_counts: Vec<usize>,
    #[serde(default)]
    pub target_class_counts: Vec<usize>,
    #[serde(default)]
    pub elapsed_seconds: f64,
    /// Pre-training came from an earlier run of the grid on the same task and seed (the methods
    /// share it; results are unchanged), so `elapsed_seconds` excludes it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub pretraining_reused: bool,
    /// The full settings of the run (method and seed included). A record is resumed only when
    /// these equal the settings the grid would use now; records without them are redone.
    #[serde(default)]
    pub config: serde_json::Value,
}

/// A run of a grid whose training stopped with a numerical failure (it diverged). It has no
/// accuracy, so it is kept apart from the [`BenchRecord`]s (`failed_runs.json` beside
/// `results.json`, `runs/*.failed.json` for resuming) and shown as such in the table: never a
/// number. Training is deterministic, so a failure with the same settings is not retried.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FailedRun {
    pub method: String,
    pub setting: String,
    pub source: String,
    pub target: String,
    pub seed: u64,
    /// The error, as `glshift fit` would print it (stage, iteration, term and advice).
    pub error: String,
    /// The full settings of the run, compared as [`BenchRecord::config`] is.
    pub config: serde_json::Value,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record() -> BenchRecord {
        BenchRecord {
            method: "mul".into(),
            setting: "uda".into(),
            source: "amazon".into(),
            target: "webcam".into(),
            seed: 0,
            target_accuracy: 0.9,
            prior_l1_error: Some(0.1),
            source_target_prior_l1: Some(0.3),
            prior_interval_coverage: None,
            prior_untrusted: false,
            source_class_counts: vec![3, 4],
            target_class_counts: vec![2, 5],
            elapsed_seconds: 1.5,
            pretraining_reused: false,
            config: serde_json::json!({"method": "mul"}),
        }
    }

    #[test]
    fn a_record_round_trips_and_an_unknown_shift_is_written_as_null() {
        let r = record();
        let back: BenchRecord = serde_json::from_slice(&serde_json::to_vec(&r).unwrap()).unwrap();
        assert_eq!(back, r);
        let unknown = BenchRecord { source_target_prior_l1: None, ..record() };
        let v = serde_json::to_value(&unknown).unwrap();
        assert!(v["source_target_prior_l1"].is_null(), "{v}");
        assert!(v.get("pretraining_reused").is_none(), "false is left out");
    }

    #[test]
    fn older_files_stay_readable() {
        // As an older writer left it: the shift as NaN (JSON null), no config, no reuse flag.
        let old = r#"[{"method": "source", "setting": "pda", "source": "a", "target": "w", "seed": 2,
            "target_accuracy": 0.75, "prior_l1_error": null, "source_target_prior_l1": null,
            "source_class_counts": [1, 2], "target_class_counts": [2, 1], "elapsed_seconds": 3.0}]"#;
        let rs: Vec<BenchRecord> = serde_json::from_str(old).unwrap();
        assert_eq!(rs[0].source_target_prior_l1, None);
        assert_eq!(rs[0].config, serde_json::Value::Null);
        assert!(!rs[0].pretraining_reused);
        // As the report's reader accepted it: identifying fields and the accuracy only.
        let minimal = r#"{"method": "mul", "setting": "uda", "source": "a", "target": "w", "seed": 0, "target_accuracy": 0.5}"#;
        let r: BenchRecord = serde_json::from_str(minimal).unwrap();
        assert_eq!((r.prior_l1_error, r.source_target_prior_l1), (None, None));
        assert!(r.source_class_counts.is_empty() && r.elapsed_seconds == 0.0);
    }
}
