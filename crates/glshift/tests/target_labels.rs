//! Target labels are never read by training, for every method: each `MethodKind` is trained
//! (tiny network, few iterations) with the target labels present, removed, and replaced by
//! labels with other class counts, and everything training produces — predictions, hold-out
//! probabilities, the label-shift estimate and its weights, the history, the label-free
//! diagnostics — must be identical.
//! Only the scores may change. (Reversing the labels, as earlier tests did, keeps the class
//! counts, so a leak through the counts would go unseen.)

use glshift::config::FitConfig;
use glshift::data::Domain;
use glshift::methods::{AdversarialConfig, BaselineConfig, MethodKind};
use glshift::nn::NetworkConfig;
use glshift::pipeline::{self, RunOutput};
use glshift_experiments::synthetic::{generate, SyntheticConfig};

fn tiny(method: MethodKind) -> FitConfig {
    FitConfig {
        method,
        seed: 5,
        pretrain_iters: 12,
        adapt_iters: 6,
        network: NetworkConfig { hidden: vec![16, 8], ..Default::default() },
        baselines: BaselineConfig {
            adversarial: AdversarialConfig { discriminator_hidden: vec![16], ..Default::default() },
            iterations: 6,
            ..Default::default()
        },
        ..Default::default()
    }
}

/// Everything a fit produces that does not come from scoring, as comparable text.
fn training_outputs(out: &RunOutput) -> String {
    let r = &out.report;
    serde_json::json!({
        "target_probs": out.target_probs.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
        "holdout_probs": out.holdout_probs.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
        "target_z": out.target_z.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
        "estimated_target_prior": r.estimated_target_prior,
        "importance_weights": r.importance_weights,
        "predicted_class_counts": r.predicted_class_counts,
        "confusion_filled_classes": r.confusion_filled_classes,
        "floored_classes": r.floored_classes,
        "history": r.history,
        "diagnostics": r.diagnostics,
    })
    .to_string()
}

#[test]
fn no_method_reads_target_labels_not_even_their_counts() {
    let task =
        generate(&SyntheticConfig { n_source: 150, n_target: 120, seed: 2, ..Default::default() })
            .unwrap();
    let labelled = task.target.clone();
    let unlabelled = Domain { labels: None, ..task.target.clone() };
    let mut recounted = task.target.clone();
    let labels = recounted.labels.as_mut().unwrap();
    let before = labels.clone();
    // Every row of class 1 becomes class 0: the class counts change, the features do not.
    labels.iter_mut().filter(|k| **k == 1).for_each(|k| *k = 0);
    assert_ne!(&before, labels, "the synthetic target must have class-1 rows");

    for method in MethodKind::ALL {
        let cfg = tiny(method);
        let runs: Vec<RunOutput> = [&labelled, &unlabelled, &recounted]
            .into_iter()
            .map(|t| pipeline::run(&task.source, t, &cfg, &mut |_| {}).unwrap())
            .collect();
        let reference = training_outputs(&runs[0]);
        assert_eq!(
            reference,
            training_outputs(&runs[1]),
            "{method}: removing the target labels changed training"
        );
        assert_eq!(
            reference,
            training_outputs(&runs[2]),
            "{method}: other target class counts changed training"
        );
        // The scores do read the labels: the test would be empty otherwise.
        assert!(
            runs[0].report.target_accuracy.is_some() && runs[1].report.target_accuracy.is_none(),
            "{method}"
        );
        assert_ne!(runs[0].report.true_target_prior, runs[2].report.true_target_prior, "{method}");
        assert!(
            runs[0].report.diagnostics.is_some(),
            "{method}: every fit with a hold-out has diagnostics"
        );
    }
}
