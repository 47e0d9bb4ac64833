//! Mini-batch training (`training = "mini-batch"`, `config::training`): MUL still gains over
//! `source` on the synthetic GLS task, a fit is deterministic per seed, its kept model predicts
//! what the fit predicted (the frozen BatchNorm sample), and `auto` leaves small data full-batch.

use glshift::config::{FitConfig, MiniBatchConfig, Training};
use glshift::methods::MethodKind;
use glshift::model::{Dataset, FitOptions, FitParams};
use glshift::pipeline;
use glshift_experiments::synthetic::{generate, SyntheticConfig};

/// Small batches so that a 600-row source takes many steps per pass.
fn minibatch(method: MethodKind, seed: u64) -> FitConfig {
    let minibatch = MiniBatchConfig {
        batch_size: 64,
        context_rows: 128,
        bn_stats_rows: 256,
        chunk_rows: 100,
        ..Default::default()
    };
    FitConfig { method, seed, training: Training::MiniBatch, minibatch, ..Default::default() }
}

#[test]
fn minibatch_mul_beats_source_on_the_synthetic_gls_task() {
    let mut gains = Vec::new();
    for seed in 0..2 {
        let task = generate(&SyntheticConfig { seed, ..Default::default() }).unwrap();
        let run = |method| {
            pipeline::run(&task.source, &task.target, &minibatch(method, seed), &mut |_| {})
                .unwrap()
        };
        let (src, mul) = (run(MethodKind::Source), run(MethodKind::Mul));
        let (a_src, a_mul) =
            (src.report.target_accuracy.unwrap(), mul.report.target_accuracy.unwrap());
        let (err, shift) =
            (mul.report.prior_l1_error.unwrap(), mul.report.source_target_prior_l1.unwrap());
        eprintln!("seed {seed}: source {a_src:.4}, mul {a_mul:.4}, prior error {err:.3} (shift {shift:.3})");
        assert!(err < shift, "the estimate must be closer to the truth than the source prior");
        gains.push(a_mul - a_src);
    }
    let mean_gain = gains.iter().sum::<f64>() / gains.len() as f64;
    assert!(mean_gain > 0.01, "mini-batch MUL should gain over source: {gains:?}");
}

#[test]
fn a_minibatch_fit_is_deterministic_and_its_model_predicts_what_it_predicted() {
    let task =
        generate(&SyntheticConfig { n_source: 400, n_target: 300, seed: 5, ..Default::default() })
            .unwrap();
    let data = Dataset::from_domains(&task.source, &task.target).unwrap();
    let cfg = FitConfig { pretrain_iters: 60, adapt_iters: 40, ..minibatch(MethodKind::Mul, 5) };
    let fit = || {
        FitParams::from_config(cfg.clone())
            .check()
            .unwrap()
            .fit_detailed(&data, FitOptions::default())
            .unwrap()
    };
    let (a, b) = (fit(), fit());
    assert_eq!(a.fitted.target_probs, b.fitted.target_probs);
    let history =
        |o: &glshift::model::FitOutcome| serde_json::to_string(&o.fitted.history).unwrap();
    assert_eq!(history(&a), history(&b));
    let rows =
        a.fitted.bn_stats_rows.as_ref().expect("a mini-batch fit names its BatchNorm sample");
    assert_eq!(rows.len(), 256, "the sample is minibatch.bn_stats_rows rows");
    assert!(
        rows.iter().all(|r| !a.fitted.holdout_rows.contains(r)),
        "the sample is drawn from the training rows"
    );
    assert_eq!(a.model.predict_proba(data.target_x()).unwrap(), a.fitted.target_probs);
    // Pre-training records the hold-out every `eval_every` steps only.
    let evaluated = a.fitted.history.iter().filter(|r| r.holdout.is_some()).count();
    let pretrain =
        a.fitted.history.iter().filter(|r| r.stage == glshift::train::Stage::Pretrain).count();
    assert_eq!(evaluated, pretrain.div_ceil(cfg.minibatch.eval_every));
}

#[test]
fn auto_trains_small_data_full_batch_bit_for_bit() {
    let task =
        generate(&SyntheticConfig { n_source: 300, n_target: 300, ..Default::default() }).unwrap();
    let base = FitConfig { pretrain_iters: 30, adapt_iters: 15, ..Default::default() };
    let auto = pipeline::run(&task.source, &task.target, &base, &mut |_| {}).unwrap();
    let full = FitConfig { training: Training::FullBatch, ..base.clone() };
    let full = pipeline::run(&task.source, &task.target, &full, &mut |_| {}).unwrap();
    assert_eq!(auto.target_probs, full.target_probs);
    let forced = FitConfig { training: Training::MiniBatch, ..base };
    let forced = pipeline::run(&task.source, &task.target, &forced, &mut |_| {}).unwrap();
    assert_ne!(auto.target_probs, forced.target_probs, "forced mini-batch is another schedule");
}

#[test]
fn a_papers_minibatch_baseline_trains_on_the_borrowed_rows() {
    let task =
        generate(&SyntheticConfig { n_source: 300, n_target: 200, seed: 2, ..Default::default() })
            .unwrap();
    let data = Dataset::from_domains(&task.source, &task.target).unwrap();
    let mut cfg = FitConfig { pretrain_iters: 30, ..minibatch(MethodKind::Dann, 2) };
    cfg.baselines.iterations = 40;
    let out = FitParams::from_config(cfg)
        .check()
        .unwrap()
        .fit_detailed(&data, FitOptions::default())
        .unwrap();
    let p = &out.fitted.target_probs;
    assert_eq!(p.nrows(), 200);
    assert!(p
        .rows()
        .into_iter()
        .all(|r| (r.sum() - 1.0).abs() < 1e-4 && r.iter().all(|v| v.is_finite())));
    assert_eq!(out.model.predict_proba(data.target_x()).unwrap(), *p);
}
