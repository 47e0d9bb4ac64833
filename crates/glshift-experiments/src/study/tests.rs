//! Tests of the label-shift study.

use super::*;
use crate::synthetic::{generate, SyntheticConfig};

fn small_cfg() -> StudyConfig {
    let mut fit = FitConfig { pretrain_iters: 40, adapt_iters: 5, ..Default::default() };
    fit.network.hidden = vec![16];
    StudyConfig {
        families: vec![PriorSpec::Dirichlet { alpha: 1.0 }, PriorSpec::Pda],
        draws: 2,
        n_target: 120,
        source_fraction: 0.5,
        bootstrap: 10,
        level: 0.9,
        interval: IntervalMethod::Basic,
        cross_fit: 1,
        seed: 0,
        fit,
    }
}

#[test]
fn study_is_deterministic_and_reports_every_estimator_per_family() {
    let t = generate(&SyntheticConfig {
        n_classes: 4,
        n_source: 400,
        n_target: 10,
        ..Default::default()
    })
    .unwrap();
    let cfg = small_cfg();
    let a = run_study(std::slice::from_ref(&t.source), &cfg, &mut |_| {}).unwrap();
    assert_eq!(a.summary.len(), 2 * SUITE.len());
    assert_eq!(a.domains[0].draws.len(), 4);
    for d in &a.domains[0].draws {
        assert!((d.true_prior.iter().sum::<f64>() - 1.0).abs() < 1e-12);
        assert_eq!(d.estimates.len(), 4);
    }
    let pda = a.domains[0].draws.iter().find(|d| d.family == "pda").unwrap();
    assert_eq!(pda.true_prior, vec![0.5, 0.5, 0.0, 0.0]);
    let b = run_study(std::slice::from_ref(&t.source), &cfg, &mut |_| {}).unwrap();
    let strip = |r: &StudyReport| {
        serde_json::to_string(&(
            &r.domains.iter().map(|d| &d.draws).collect::<Vec<_>>(),
            &r.summary,
        ))
        .unwrap()
    };
    assert_eq!(strip(&a), strip(&b));
    let md = study_markdown(&a);
    assert!(
        md.contains("| dirichlet:1 |") && md.contains("| pda |") && md.contains("mlls"),
        "{md}"
    );
}

#[test]
fn cross_fitted_study_shows_every_source_row_and_both_interval_methods() {
    let t = generate(&SyntheticConfig {
        n_classes: 3,
        n_source: 240,
        n_target: 10,
        ..Default::default()
    })
    .unwrap();
    let mut cfg = small_cfg();
    cfg.cross_fit = 2;
    cfg.families = vec![PriorSpec::Pda];
    let a = run_study(std::slice::from_ref(&t.source), &cfg, &mut |_| {}).unwrap();
    let d = &a.domains[0];
    assert_eq!(d.n_source_holdout, d.n_source);
    assert_eq!(d.n_source_train.len(), 2);
    assert_eq!(
        d.n_source_train.iter().sum::<usize>(),
        d.n_source,
        "each row trains exactly one of the 2 models"
    );
    for r in &d.draws {
        for e in r.estimates.values() {
            assert_eq!(e.intervals["basic"].covered, e.covered, "basic is the headline method");
            assert_eq!(e.intervals.len(), 2);
        }
    }
    for row in &a.summary {
        assert_eq!(row.coverage, row.coverage_by_interval["basic"].coverage);
    }
    let b = run_study(std::slice::from_ref(&t.source), &cfg, &mut |_| {}).unwrap();
    assert_eq!(
        serde_json::to_string(&a.summary).unwrap(),
        serde_json::to_string(&b.summary).unwrap()
    );
}

#[test]
fn study_rejects_bad_settings_naming_the_parameter() {
    let t = generate(&SyntheticConfig {
        n_classes: 3,
        n_source: 90,
        n_target: 10,
        ..Default::default()
    })
    .unwrap();
    let mut cfg = small_cfg();
    cfg.bootstrap = 1;
    let e = run_study(std::slice::from_ref(&t.source), &cfg, &mut |_| {}).unwrap_err();
    assert!(e.to_string().contains("bootstrap"), "{e}");
    let mut cfg = small_cfg();
    cfg.draws = 0;
    assert!(run_study(std::slice::from_ref(&t.source), &cfg, &mut |_| {})
        .unwrap_err()
        .to_string()
        .contains("draws"));
    let mut unlabelled = t.source.clone();
    unlabelled.labels = None;
    let e = run_study(&[unlabelled], &small_cfg(), &mut |_| {}).unwrap_err();
    assert!(e.to_string().contains("labelled"), "{e}");
}
