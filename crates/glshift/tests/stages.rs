//! The training loop's public stages: `pretrain` then `adapt` is `fit`, bit for bit, for a
//! method of each kind (no term, MUL, an adversarial baseline, CORAL); `adapt` refuses a
//! pre-trained state made on other rows or settings.

use glshift::config::FitConfig;
use glshift::methods::{AdversarialConfig, BaselineConfig, MethodKind};
use glshift::nn::NetworkConfig;
use glshift::train::Fitted;
use glshift::train::{adapt, fit, pretrain};

mod support;

fn tiny(method: MethodKind, seed: u64) -> FitConfig {
    FitConfig {
        method,
        seed,
        pretrain_iters: 15,
        adapt_iters: 8,
        network: NetworkConfig { hidden: vec![16, 8], ..Default::default() },
        baselines: BaselineConfig {
            adversarial: AdversarialConfig { discriminator_hidden: vec![16], ..Default::default() },
            iterations: 6,
            ..Default::default()
        },
        ..Default::default()
    }
}

fn fingerprint(f: &Fitted) -> String {
    serde_json::json!({
        "probs": f.target_probs.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
        "z": f.target_z.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
        "history": f.history,
        "shift": f.shift.as_ref().map(|s| (s.weights.clone(), s.target_prior.clone())),
        "holdout": f.holdout_rows,
    })
    .to_string()
}

#[test]
fn pretrain_then_adapt_is_fit_bit_for_bit() {
    let task = support::synthetic_task(150, 120, 3);
    let data = support::fit_data(&task);
    for method in [MethodKind::Source, MethodKind::Mul, MethodKind::Dann, MethodKind::Coral] {
        let cfg = tiny(method, 1);
        let whole = fit(&data, &cfg, &mut |_| {}).unwrap();
        let pre = pretrain(&data, &cfg, &mut |_| {}).unwrap();
        assert_eq!(
            pre.history().len(),
            whole.history.iter().filter(|r| r.stage == glshift::train::Stage::Pretrain).count()
        );
        let staged = adapt(&pre, &data, &cfg, &mut |_| {}).unwrap();
        assert_eq!(fingerprint(&whole), fingerprint(&staged), "{method}");
        // The same pre-trained state serves another method.
        let other = FitConfig { method: MethodKind::Source, ..cfg.clone() };
        assert_eq!(
            fingerprint(&fit(&data, &other, &mut |_| {}).unwrap()),
            fingerprint(&adapt(&pre, &data, &other, &mut |_| {}).unwrap())
        );
    }
    let pre = pretrain(&data, &tiny(MethodKind::Mul, 1), &mut |_| {}).unwrap();
    let err = adapt(&pre, &data, &tiny(MethodKind::Mul, 2), &mut |_| {})
        .expect_err("another seed must be refused")
        .to_string();
    assert!(err.contains("pretrained") && err.contains("seed"), "{err}");
}
