//! `select` end to end on a small seeded synthetic task: target labels are never read before
//! the final score (relabelled targets with other class counts give bit-identical selections),
//! shared pre-training changes nothing (the chosen run equals a plain fit of its
//! configuration), and the thread count changes nothing.

use glshift::config::FitConfig;
use glshift::data::Domain;
use glshift::nn::NetworkConfig;
use glshift::pipeline::{self, RunOutput};
use glshift::select::{SelectOutcome, SelectParams, SelectRule};
use glshift_experiments::synthetic::{generate, SyntheticConfig, SyntheticTask};

fn task() -> SyntheticTask {
    generate(&SyntheticConfig { n_source: 150, n_target: 120, seed: 3, ..Default::default() })
        .unwrap()
}

fn base() -> FitConfig {
    FitConfig {
        seed: 4,
        pretrain_iters: 15,
        adapt_iters: 8,
        network: NetworkConfig { hidden: vec![16, 8], ..Default::default() },
        ..Default::default()
    }
}

fn select(source: &Domain, target: &Domain, rule: SelectRule) -> SelectOutcome {
    SelectParams::new(base())
        .rule(rule)
        .check()
        .unwrap()
        .select(source, target, &mut |_, _| {})
        .unwrap()
}

/// What training and selection produced, without timings and without what reads target labels.
fn label_free(o: &SelectOutcome) -> String {
    let r = &o.chosen.report;
    serde_json::json!({
        "selection": o.selection,
        "target_probs": o.chosen.target_probs.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
        "history": r.history,
        "diagnostics": r.diagnostics,
        "estimated_target_prior": r.estimated_target_prior,
    })
    .to_string()
}

#[test]
fn relabelled_targets_give_the_same_choice_scores_and_diagnostics() {
    let t = task();
    let labelled = t.target.clone();
    let unlabelled = Domain { labels: None, ..t.target.clone() };
    let mut recounted = t.target.clone();
    let labels = recounted.labels.as_mut().unwrap();
    let before = labels.clone();
    // Class 1 → 0 and 0 → 2: other class counts, not only another order.
    labels.iter_mut().for_each(|k| {
        *k = match *k {
            1 => 0,
            0 => 2,
            k => k,
        }
    });
    let count = |y: &[usize], k: usize| y.iter().filter(|&&v| v == k).count();
    assert_ne!(count(&before, 0), count(labels, 0), "the relabelling must change the class counts");

    for rule in
        [SelectRule::SafeEntropy, SelectRule::MeanRank, SelectRule::Iwcv, SelectRule::Circular]
    {
        let runs: Vec<SelectOutcome> = [&labelled, &unlabelled, &recounted]
            .iter()
            .map(|d| select(&t.source, d, rule))
            .collect();
        let reference = label_free(&runs[0]);
        assert_eq!(
            reference,
            label_free(&runs[1]),
            "{rule}: removing the target labels changed the selection"
        );
        assert_eq!(
            reference,
            label_free(&runs[2]),
            "{rule}: other target class counts changed the selection"
        );
        for c in &runs[0].selection.candidates {
            assert!(c.diagnostics.is_some(), "{rule}: '{}' has no diagnostics", c.name);
            let s = &c.scores;
            assert!(
                s.iwcv.is_some()
                    && s.dev.is_some()
                    && s.snd.is_some()
                    && s.neg_entropy.is_some()
                    && s.circular.is_some(),
                "{rule}: {s:?}"
            );
        }
        // The labels are read after the choice: the evaluation exists exactly when they do and
        // follows them.
        assert!(runs[1].evaluation.is_none() && runs[1].chosen.report.target_accuracy.is_none());
        let (a, b) = (runs[0].evaluation.as_ref().unwrap(), runs[2].evaluation.as_ref().unwrap());
        assert_eq!(a.target_accuracy.len(), runs[0].selection.candidates.len());
        assert_ne!(a.target_accuracy, b.target_accuracy, "{rule}: accuracies must read the labels");
        assert_eq!(a.chosen_accuracy, runs[0].chosen.report.target_accuracy.unwrap());
    }
}

fn comparable(out: &RunOutput) -> String {
    let mut r = serde_json::to_value(&out.report).unwrap();
    let o = r.as_object_mut().unwrap();
    o.remove("elapsed_seconds");
    o.remove("pretraining_reused");
    serde_json::json!({
        "report": r,
        "target_probs": out.target_probs.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
        "holdout_probs": out.holdout_probs.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
        "model": out.model.to_bytes().unwrap(),
    })
    .to_string()
}

#[test]
fn every_candidate_equals_a_plain_fit_of_its_configuration() {
    let t = task();
    for rule in [SelectRule::MeanRank, SelectRule::Snd, SelectRule::Iwcv] {
        let o = select(&t.source, &t.target, rule);
        let chosen = &o.selection.candidates[o.selection.chosen];
        let plain = pipeline::run(&t.source, &t.target, &chosen.config, &mut |_| {}).unwrap();
        assert_eq!(
            comparable(&o.chosen),
            comparable(&plain),
            "{rule}: '{}' differs from its plain fit",
            chosen.name
        );
        for (c, acc) in
            o.selection.candidates.iter().zip(&o.evaluation.as_ref().unwrap().target_accuracy)
        {
            let plain = pipeline::run(&t.source, &t.target, &c.config, &mut |_| {}).unwrap();
            assert_eq!(c.diagnostics, plain.report.diagnostics, "{}", c.name);
            assert_eq!(c.estimated_target_prior, plain.report.estimated_target_prior, "{}", c.name);
            assert_eq!(Some(*acc), plain.report.target_accuracy, "{}", c.name);
        }
    }
}

#[test]
fn the_thread_count_changes_nothing() {
    let t = task();
    let run = |threads: usize| {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
        pool.install(|| label_free(&select(&t.source, &t.target, SelectRule::SafeEntropy)))
    };
    assert_eq!(run(1), run(3));
}
