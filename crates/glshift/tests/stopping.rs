//! The label-free stopping rules (docs/methods.md "Stopping rules"): with the default
//! thresholds (and a pre-training window of 30 instead of 100, so that this small task's
//! 300-iteration cap is long enough to show a stop) both stages end before their caps; the
//! result does not depend on the number of threads; J_TU has settled at the adaptation stop;
//! turning the rules off runs every iteration.

use glshift::config::FitConfig;
use glshift::methods::{Discrepancy, MethodKind};
use glshift::nn::NetworkConfig;
use glshift::train::fit;
use glshift::train::{Fitted, Stage};

mod support;

fn config() -> FitConfig {
    FitConfig {
        method: MethodKind::Mul,
        seed: 2,
        pretrain_iters: 300,
        pretrain_patience: 30,
        adapt_iters: 200,
        network: NetworkConfig { hidden: vec![32, 16], ..Default::default() },
        ..Default::default()
    }
}

fn counts(f: &Fitted) -> (usize, usize) {
    let adapt = f.history.iter().filter(|r| r.stage == Stage::Adapt).count();
    (f.history.len() - adapt, adapt)
}

fn fingerprint(f: &Fitted) -> String {
    serde_json::json!({
        "probs": f.target_probs.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
        "history": f.history,
    })
    .to_string()
}

#[test]
fn both_stages_stop_early_deterministically_and_the_rules_can_be_turned_off() {
    let task = support::synthetic_task(300, 240, 4);
    let data = support::fit_data(&task);
    let run = |cfg: &FitConfig, threads: usize| {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
        pool.install(|| fit(&data, cfg, &mut |_| {}).unwrap())
    };
    let cfg = config();
    let (one, three) = (run(&cfg, 1), run(&cfg, 3));
    assert_eq!(
        fingerprint(&one),
        fingerprint(&three),
        "the stopping points and results depend on the thread count"
    );
    let (pre, ad) = counts(&one);
    assert!(pre < cfg.pretrain_iters, "pre-training ran all {pre} iterations");
    assert!(
        ad < cfg.adapt_iters && ad >= cfg.adapt_stop.min_iters,
        "adaptation ran {ad} iterations"
    );
    // J_DU pooled the target rows at least a window before the stop.
    let pooled_at = one
        .history
        .iter()
        .position(|r| r.stage == Stage::Adapt && r.du_pooled)
        .expect("J_DU pooled");
    assert!(
        one.history.len() - pooled_at > cfg.adapt_stop.window,
        "stopped {} iterations after pooling",
        one.history.len() - pooled_at
    );
    // J_TU had settled over the last window: relative change ≤ ρ (the default's J_TU condition).
    let (rho, w) = (cfg.adapt_stop.tol_objective.expect("set by default"), cfg.adapt_stop.window);
    let j = |k: usize| one.history[one.history.len() - 1 - k].j_tu;
    assert!(
        (j(w) - j(0)).abs() <= rho * j(w).abs(),
        "J_TU moved from {} to {} over the last window",
        j(w),
        j(0)
    );

    let mut off = config();
    off.pretrain_patience = off.pretrain_iters;
    off.adapt_stop.enabled = false;
    let full = run(&off, 2);
    assert_eq!(counts(&full).1, off.adapt_iters);
    assert_eq!(
        counts(&full).0,
        off.pretrain_iters,
        "a window as long as pre-training never stops it"
    );
}

/// `mmd-classwise` is MUL with class-wise MMD in place of MCMD (the paper's ablation), so it
/// trains as MUL does: the adaptation stop and the prior guard apply, and the fit is bit for bit
/// method `mul` with `mul.discrepancy = classwise-mmd` (the ablation's row).
#[test]
fn mmd_classwise_trains_exactly_as_mul_with_the_classwise_discrepancy() {
    let task = support::synthetic_task(300, 240, 4);
    let data = support::fit_data(&task);
    let method = FitConfig { method: MethodKind::MmdClasswise, ..config() };
    let mut row = config();
    row.mul.discrepancy = Discrepancy::ClasswiseMmd;
    let (a, b) =
        (fit(&data, &method, &mut |_| {}).unwrap(), fit(&data, &row, &mut |_| {}).unwrap());
    assert_eq!(
        fingerprint(&a),
        fingerprint(&b),
        "mmd-classwise and the ablation's row train differently"
    );
    assert!(a.prior_guard.is_some(), "the prior guard did not run for mmd-classwise");
    let ad = counts(&a).1;
    assert!(
        ad < method.adapt_iters,
        "mmd-classwise adapted all {ad} iterations: no adaptation stop"
    );
}
