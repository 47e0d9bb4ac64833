//! Label-shift estimation on known-truth targets simulated from the real features of
//! `<repo>/../shared/data` (pure label shift within one domain). When the folder is absent
//! each test prints `SKIPPED: <reason>` and returns without checking anything.

use std::path::{Path, PathBuf};

use glshift::config::FitConfig;
use glshift::data::load_domain;
use glshift::label_shift::IntervalMethod;
use glshift_experiments::simulate::PriorSpec;
use glshift_experiments::study::{run_study, StudyConfig};

fn folder(name: &str) -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data").join(name);
    if dir.is_dir() {
        Some(dir)
    } else {
        eprintln!("SKIPPED: {} not found (test skipped)", dir.display());
        None
    }
}

#[test]
fn on_usps_every_estimator_but_rlls_beats_no_correction_and_rlls_keeps_the_source_prior() {
    let Some(dir) = folder("mnist_usps") else { return };
    let usps = load_domain(&dir, "usps").unwrap();
    let cfg = StudyConfig {
        families: vec![PriorSpec::Dirichlet { alpha: 1.0 }],
        draws: 3,
        n_target: 500,
        source_fraction: 0.5,
        bootstrap: 20,
        level: 0.9,
        interval: IntervalMethod::Basic,
        // One classifier with its 20% hold-out (one fit instead of five keeps the test short).
        cross_fit: 1,
        seed: 0,
        fit: FitConfig::default(),
    };
    let r = run_study(&[usps], &cfg, &mut |l| eprintln!("{l}")).unwrap();
    for row in &r.summary {
        eprintln!(
            "{} ℓ1 {:.3} (no correction {:.3})",
            row.estimator, row.l1_mean, row.no_correction_l1_mean
        );
        assert_eq!(row.failures, 0, "{row:?}");
        if row.estimator == "rlls" {
            // 181 hold-out rows: the regulariser forces w = 1 (see label_shift::rlls_regulariser).
            assert!((row.l1_mean - row.no_correction_l1_mean).abs() < 1e-6, "{row:?}");
        } else {
            assert!(row.l1_mean < 0.5 * row.no_correction_l1_mean && row.l1_mean < 0.2, "{row:?}");
        }
    }
    // Pure label shift from one domain: the target rows never overlap the source part.
    assert!(r.domains[0].n_source + r.domains[0].n_pool == 1800);
}
