//! `glshift ablation` and the baselines through `glshift bench` / `glshift fit` on the small
//! fixture: the files they write, resuming, and the method names they accept.

mod common;

use common::*;

fn records(runs: &std::path::Path) -> Vec<(String, std::time::SystemTime)> {
    let mut v: Vec<_> = std::fs::read_dir(runs)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .map(|p| {
            (
                p.file_name().unwrap().to_string_lossy().into_owned(),
                std::fs::metadata(&p).unwrap().modified().unwrap(),
            )
        })
        .collect();
    v.sort();
    v
}

#[test]
fn ablation_writes_one_row_per_variant_and_resumes() {
    let dir = tempfile::tempdir().unwrap();
    write_fixture(dir.path());
    let cfg = fast_config(dir.path());
    let out = dir.path().join("abl");
    let args = [
        "ablation",
        "--data",
        dir.path().to_str().unwrap(),
        "--setting",
        "pda",
        "--pda-classes",
        "2",
        "--tasks",
        "src:tgt",
        "--seeds",
        "0",
        "--config",
        cfg.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--quiet",
    ];
    let o = run(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    let results: Vec<serde_json::Value> =
        serde_json::from_slice(&std::fs::read(out.join("results.json")).unwrap()).unwrap();
    let methods: Vec<&str> = results.iter().map(|r| r["method"].as_str().unwrap()).collect();
    assert_eq!(
        methods,
        [
            "ablation-tu",
            "ablation-wy-tu",
            "ablation-wy-du",
            "ablation-tu-du",
            "ablation-mul",
            "ablation-mul-mmd"
        ]
    );
    assert!(results.iter().all(|r| r["setting"] == "pda" && r["target_accuracy"].is_number()));
    let table = std::fs::read_to_string(out.join("table.md")).unwrap();
    for label in [
        "| J_TU |",
        "| w,y + J_TU |",
        "| w,y + J_DU |",
        "| J_TU + J_DU |",
        "| w,y + J_TU + J_DU (MUL) |",
        "| MUL, class-wise MMD |",
        "wall time",
    ] {
        assert!(table.contains(label), "table.md lacks {label}:\n{table}");
    }
    // The w,y rows estimate a target prior; the rows without w,y do not.
    let with_prior: Vec<bool> = results.iter().map(|r| r["prior_l1_error"].is_number()).collect();
    assert_eq!(with_prior, [false, true, true, false, true, true]);

    let before = records(&out.join("runs"));
    assert_eq!(before.len(), 6);
    let o = run(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(records(&out.join("runs")), before, "a finished run was redone");
    assert!(std::fs::read_to_string(out.join("table.md"))
        .unwrap()
        .contains("(6 read back from runs/)"));
}

#[test]
fn bench_and_fit_accept_every_baseline() {
    let dir = tempfile::tempdir().unwrap();
    write_fixture(dir.path());
    let cfg = dir.path().join("tiny.toml");
    std::fs::write(&cfg, "pretrain_iters = 20\nadapt_iters = 10\n[network]\nhidden = [16]\n[baselines]\niterations = 6\n[baselines.adversarial]\ndiscriminator_hidden = [16]\n").unwrap();
    let out = dir.path().join("bench");
    let methods = "source,dan,dann,cdan,cdan-e,jan,iw-dann,iw-cdan,pada,mmd-classwise,mul";
    let o = run(&[
        "bench",
        "--data",
        dir.path().to_str().unwrap(),
        "--tasks",
        "src:tgt",
        "--methods",
        methods,
        "--seeds",
        "0",
        "--config",
        cfg.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--quiet",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let results: Vec<serde_json::Value> =
        serde_json::from_slice(&std::fs::read(out.join("results.json")).unwrap()).unwrap();
    let got: Vec<&str> = results.iter().map(|r| r["method"].as_str().unwrap()).collect();
    assert_eq!(got, methods.split(',').collect::<Vec<_>>());

    let fit_out = dir.path().join("fit");
    let o = run(&[
        "fit",
        "--data",
        dir.path().to_str().unwrap(),
        "--source",
        "src",
        "--target",
        "tgt",
        "--method",
        "iw-cdan",
        "--config",
        cfg.to_str().unwrap(),
        "--out",
        fit_out.to_str().unwrap(),
        "--quiet",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(fit_out.join("report.json")).unwrap()).unwrap();
    assert_eq!(report["method"], "iw-cdan");
    assert!(report["importance_weights"].is_array());
    assert!(report["history"]
        .as_array()
        .unwrap()
        .iter()
        .any(|r| r["transfer"]["lambda"].is_number()));
}

#[test]
fn unknown_method_names_list_the_known_ones_before_any_work() {
    let dir = tempfile::tempdir().unwrap();
    write_fixture(dir.path());
    let out = dir.path().join("bench");
    let o = run(&[
        "bench",
        "--data",
        dir.path().to_str().unwrap(),
        "--methods",
        "mul,cdan+e",
        "--out",
        out.to_str().unwrap(),
        "--quiet",
    ]);
    assert!(!o.status.success());
    let err = stderr(&o);
    assert!(
        err.contains("cdan+e") && err.contains("cdan-e") && err.contains("mmd-classwise"),
        "{err}"
    );
    assert!(out_is_empty(&out));
    let bad_cfg = dir.path().join("bad.toml");
    std::fs::write(&bad_cfg, "[baselines.adversarial]\ndiscriminator_dropout = 1.5\n").unwrap();
    let o = run(&[
        "ablation",
        "--data",
        dir.path().to_str().unwrap(),
        "--config",
        bad_cfg.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--quiet",
    ]);
    assert!(
        !o.status.success() && stderr(&o).contains("baselines.adversarial.discriminator_dropout"),
        "{}",
        stderr(&o)
    );
}
