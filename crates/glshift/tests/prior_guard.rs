//! The prior guard (`label_shift.guard`, docs/safety.md "The prior guard"): on by default for
//! MUL; when it trusts the pre-trained network's estimate (and does not cap the drift) the fit
//! is the unguarded fit bit for bit; when it does not, the response runs: the fallback under the
//! confident-share floor (no MUL term, w ≡ 1, p̂ᵗ = pˢ, or MUL's terms without the correction),
//! the disagreement response above it (the same fallback by default, or MUL's terms with w ≡ 1
//! or with shrunk estimates); `source` never runs it.

use glshift::config::{DisagreementResponse, FitConfig, GuardFallback};
use glshift::methods::MethodKind;
use glshift::nn::NetworkConfig;
use glshift::prior_policy::GuardResponse;
use glshift::train::fit;
use glshift::train::{Fitted, Stage};

mod support;

fn config() -> FitConfig {
    FitConfig {
        method: MethodKind::Mul,
        seed: 3,
        pretrain_iters: 80,
        adapt_iters: 30,
        network: NetworkConfig { hidden: vec![32, 16], ..Default::default() },
        ..Default::default()
    }
}

fn fingerprint(f: &Fitted) -> String {
    serde_json::json!({
        "probs": f.target_probs.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
        "history": f.history,
    })
    .to_string()
}

fn adapt_records(f: &Fitted) -> impl Iterator<Item = &glshift::train::IterRecord> {
    f.history.iter().filter(|r| r.stage == Stage::Adapt)
}

#[test]
fn the_guard_is_on_by_default_and_a_trusted_estimate_leaves_the_fit_unchanged() {
    assert!(FitConfig::default().label_shift.guard.enabled);
    let task = support::synthetic_task(300, 240, 4);
    let data = support::fit_data(&task);
    let guarded = fit(&data, &config(), &mut |_| {}).unwrap();
    let g = guarded.prior_guard.as_ref().expect("MUL runs the guard by default");
    assert!(g.resamples > 100 && (0.0..=1.0).contains(&g.p_value), "{g:?}");
    let mut off = config();
    off.label_shift.guard.enabled = false;
    let plain = fit(&data, &off, &mut |_| {}).unwrap();
    assert!(plain.prior_guard.is_none());
    if g.trusted {
        assert_eq!(
            fingerprint(&guarded),
            fingerprint(&plain),
            "a trusted estimate must change nothing"
        );
    } else {
        assert_ne!(fingerprint(&guarded), fingerprint(&plain));
    }
    // This task's target is under the confident-share floor (rule 2); without the floor its
    // estimate is trusted, and the trusted branch is exercised for certain.
    let mut no_floor = config();
    no_floor.label_shift.guard.min_confident_share = 0.0;
    let trusted = fit(&data, &no_floor, &mut |_| {}).unwrap();
    assert!(trusted.prior_guard.as_ref().is_some_and(|g| g.trusted), "{:?}", trusted.prior_guard);
    assert_eq!(
        fingerprint(&trusted),
        fingerprint(&plain),
        "a trusted estimate must change nothing"
    );
    let source =
        fit(&data, &FitConfig { method: MethodKind::Source, ..config() }, &mut |_| {}).unwrap();
    assert!(source.prior_guard.is_none(), "source has no estimate to guard");
}

#[test]
fn a_distrusted_estimate_runs_the_fallback() {
    let task = support::synthetic_task(300, 240, 4);
    let data = support::fit_data(&task);
    // α = 1 makes every disagreement significant (here the target is also under the
    // confident-share floor); with `on_disagreement = "fallback"` (the default) every
    // distrusted fit runs the fallback, here `source`.
    let mut cfg = config();
    cfg.label_shift.guard.alpha = 1.0;
    cfg.label_shift.guard.fallback = GuardFallback::Source;
    assert_eq!(cfg.label_shift.guard.on_disagreement, DisagreementResponse::Fallback);
    let f = fit(&data, &cfg, &mut |_| {}).unwrap();
    let g = f.prior_guard.as_ref().unwrap();
    assert!(!g.trusted, "{g:?}");
    let ps = &f.source_prior;
    for r in adapt_records(&f) {
        assert_eq!(
            r.target_prior.as_deref(),
            Some(ps.as_slice()),
            "the prior is pˢ at iteration {}",
            r.iter
        );
        assert_eq!((r.j_tu, r.j_du), (0.0, 0.0), "source fallback adds no MUL term");
    }
    assert!(f.shift.as_ref().unwrap().weights.iter().all(|&w| w == 1.0));
    assert_eq!(adapt_records(&f).count(), cfg.adapt_iters, "the fallback runs the source schedule");

    cfg.label_shift.guard.fallback = GuardFallback::NoCorrection;
    let f = fit(&data, &cfg, &mut |_| {}).unwrap();
    assert!(adapt_records(&f).any(|r| r.j_tu > 0.0), "no-correction keeps J_TU");
    assert!(adapt_records(&f).all(|r| r.target_prior.as_deref() == Some(ps.as_slice())));
}

#[test]
fn the_default_fallback_keeps_the_no_correction_fit_or_redoes_it_as_source_by_the_check() {
    let task = support::synthetic_task(300, 240, 4);
    let data = support::fit_data(&task);
    let mut cfg = config();
    cfg.label_shift.guard.alpha = 1.0;
    assert_eq!(cfg.label_shift.guard.fallback, GuardFallback::AdaptChecked);
    let f = fit(&data, &cfg, &mut |_| {}).unwrap();
    let g = f.prior_guard.as_ref().unwrap();
    assert!(!g.trusted, "{g:?}");
    let check = f.adaptation_check.as_ref().expect("a distrusted guard runs the check");
    assert_eq!(
        (check.qp_mlls_l1_before, check.confident_share_before),
        (g.qp_mlls_l1, g.confident_share)
    );
    let (d, m) = (check.qp_mlls_l1_after.unwrap(), check.confident_share_after.unwrap());
    let floor = cfg.label_shift.guard.min_confident_share;
    assert_eq!(check.kept, d <= g.qp_mlls_l1 && m >= g.confident_share && m >= floor, "{check:?}");
    // The fit is one of the two single-response fits, bit for bit: the check only chooses.
    let with = |fallback| {
        let mut c = cfg.clone();
        c.label_shift.guard.fallback = fallback;
        fit(&data, &c, &mut |_| {}).unwrap()
    };
    let no_correction = with(GuardFallback::NoCorrection);
    let source = with(GuardFallback::Source);
    assert!(no_correction.adaptation_check.is_none() && source.adaptation_check.is_none());
    let expected = if check.kept { &no_correction } else { &source };
    assert_eq!(fingerprint(&f), fingerprint(expected), "kept = {}", check.kept);
    // The check measured the no-correction fit's final network.
    let y = task.source.labels.as_deref().unwrap();
    let labels: Vec<usize> = no_correction.holdout_rows.iter().map(|&i| y[i]).collect();
    let again = glshift::prior_policy::adaptation_check(
        g,
        no_correction.holdout_probs.view(),
        &labels,
        no_correction.target_probs.view(),
        &no_correction.source_prior,
        &glshift::prior_policy::CheckParams {
            tau: cfg.mul.tau,
            soft: true,
            calibrate: true,
            min_share: cfg.label_shift.guard.min_confident_share,
        },
    )
    .unwrap();
    assert_eq!(&again, check);
    // A trusted estimate runs no check.
    cfg.label_shift.guard.min_confident_share = 0.0;
    cfg.label_shift.guard.alpha = 0.05;
    let trusted = fit(&data, &cfg, &mut |_| {}).unwrap();
    assert!(trusted.prior_guard.as_ref().is_some_and(|g| g.trusted));
    assert!(trusted.adaptation_check.is_none());
}

#[test]
fn a_disagreement_with_a_confident_network_keeps_mul_without_the_correction() {
    let task = support::synthetic_task(300, 240, 4);
    let data = support::fit_data(&task);
    // α = 1, a box of level 0.02 (about as wide as the replicates' median) and a prior floor
    // (the guard's resolution) under its largest class gap (about 0.02) make the small
    // disagreement of this task count; no confident-share floor: rule 1 alone fires.
    let mut cfg = config();
    cfg.label_shift.guard.alpha = 1.0;
    cfg.label_shift.guard.level = 0.02;
    cfg.label_shift.prior_floor = Some(0.01);
    cfg.label_shift.guard.min_confident_share = 0.0;
    cfg.label_shift.guard.on_disagreement = DisagreementResponse::NoCorrection;
    let f = fit(&data, &cfg, &mut |_| {}).unwrap();
    let g = f.prior_guard.as_ref().unwrap();
    assert!(!g.trusted && !g.low_confidence(), "{g:?}");
    assert_eq!(
        g.response(cfg.label_shift.guard.fallback, cfg.label_shift.guard.on_disagreement),
        GuardResponse::NoCorrection
    );
    let ps = &f.source_prior;
    assert!(adapt_records(&f).all(|r| r.target_prior.as_deref() == Some(ps.as_slice())), "w ≡ 1");
    assert!(adapt_records(&f).any(|r| r.j_tu > 0.0), "MUL's terms are kept");
    // It is the `no-correction` fallback's fit bit for bit.
    let mut same = cfg.clone();
    same.label_shift.guard.on_disagreement = DisagreementResponse::Fallback;
    same.label_shift.guard.fallback = GuardFallback::NoCorrection;
    assert_eq!(fingerprint(&f), fingerprint(&fit(&data, &same, &mut |_| {}).unwrap()));
    // `shrink` moves every in-loop estimate λ of the way from pˢ to the raw estimate.
    cfg.label_shift.guard.on_disagreement = DisagreementResponse::Shrink;
    let s = fit(&data, &cfg, &mut |_| {}).unwrap();
    let lambda = s.prior_guard.as_ref().unwrap().kept_correction;
    assert!((0.0..=1.0).contains(&lambda), "{lambda}");
    if lambda > 0.0 {
        assert!(
            adapt_records(&s).any(|r| r.target_prior.as_deref() != Some(ps.as_slice())),
            "λ = {lambda}: a shrunk correction is still one"
        );
    }
}

#[test]
fn a_distrusted_fit_reports_an_untrusted_prior_with_a_range_holding_every_estimate() {
    let task = support::synthetic_task(300, 240, 4);
    let mut cfg = config();
    cfg.label_shift.guard.alpha = 1.0;
    for fallback in [GuardFallback::AdaptChecked, GuardFallback::Source] {
        cfg.label_shift.guard.fallback = fallback;
        let out = glshift::pipeline::run(&task.source, &task.target, &cfg, &mut |_| {}).unwrap();
        let r = &out.report;
        let g = r.prior_guard.as_ref().unwrap();
        assert!(!g.trusted);
        let why = r.estimated_target_prior_untrusted.as_deref().expect("the report says so");
        let est = r.estimated_target_prior.as_ref().unwrap();
        let kept = r.adaptation_check.as_ref().is_some_and(|c| c.kept);
        if why.contains("adapted network's probabilities") {
            assert!(kept, "only a kept adaptation is read");
            // Its confident rows' probabilities, pˢ on the others: on the simplex, not pˢ.
            assert!((est.iter().sum::<f64>() - 1.0).abs() < 1e-9);
            assert_ne!(est, &r.source_prior);
        } else {
            assert!(why.contains("source proportions"), "{why}");
            assert_eq!(est, &r.source_prior, "{fallback:?}");
        }
        let (lo, hi) = (
            r.estimated_target_prior_ci_low.as_ref().unwrap(),
            r.estimated_target_prior_ci_high.as_ref().unwrap(),
        );
        let mut points = vec![est, &r.source_prior, &g.qp_prior, &g.mlls_prior];
        if let Some(c) = &r.adaptation_check {
            points.extend([&c.qp_prior_after, &c.mlls_prior_after]);
        }
        for p in points {
            for k in 0..p.len() {
                assert!(lo[k] <= p[k] && p[k] <= hi[k], "class {k}: {p:?} outside {lo:?}–{hi:?}");
            }
        }
        // Evaluation: the share of classes whose true prior the interval holds.
        let truth = r.true_target_prior.as_ref().unwrap();
        let inside = (0..truth.len()).filter(|&k| lo[k] <= truth[k] && truth[k] <= hi[k]).count();
        assert_eq!(r.prior_interval_coverage(), Some(inside as f64 / truth.len() as f64));
    }
    // A trusted fit reports the configured estimator, with no note.
    cfg.label_shift.guard.alpha = 0.05;
    cfg.label_shift.guard.min_confident_share = 0.0;
    let out = glshift::pipeline::run(&task.source, &task.target, &cfg, &mut |_| {}).unwrap();
    assert!(out.report.prior_guard.as_ref().unwrap().trusted);
    assert!(out.report.estimated_target_prior_untrusted.is_none());
}
