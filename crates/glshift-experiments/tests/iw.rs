//! The training half of the importance-weighting ablation on the synthetic GLS task.

use glshift::config::FitConfig;
use glshift::methods::MethodKind;
use glshift_experiments::iw::{iw_ablation, IwOptions};
use glshift_experiments::synthetic::{generate, SyntheticConfig};

#[test]
fn iw_ablation_trains_both_models_on_a_2d_representation() {
    let task = generate(&SyntheticConfig {
        n_classes: 4,
        n_source: 240,
        n_target: 160,
        ..Default::default()
    })
    .unwrap();
    let mut cfg = FitConfig {
        method: MethodKind::Mul,
        pretrain_iters: 40,
        adapt_iters: 30,
        ..Default::default()
    };
    cfg.network.hidden = vec![16];
    let opts = IwOptions { hidden: vec![16, 2], grid_res: 40, ..Default::default() };
    let a = iw_ablation(&task.source, &task.target, &cfg, &opts).unwrap();
    assert_eq!(a.runs.len(), 2);
    assert!(!a.runs[0].importance_weighting && a.runs[1].importance_weighting);
    assert_eq!(a.class_names.len(), 4);
    assert!(
        a.runs.iter().all(|r| r.regions.targets.iter().all(|t| t.2 < 2)),
        "the target keeps the 2 shared classes"
    );
    assert!(a.runs.iter().all(|r| r.regions.grid.len() == 40 * 40));
    let bad = IwOptions { hidden: vec![16, 3], ..Default::default() };
    assert!(iw_ablation(&task.source, &task.target, &cfg, &bad).is_err());
}
