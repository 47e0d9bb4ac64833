//! `glshift ablation` on the small fixture: the files it writes, and resuming.

mod common;

use common::*;

fn records(runs: &std::path::Path) -> Vec<(String, std::time::SystemTime)> {
    let mut v: Vec<_> = std::fs::read_dir(runs)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .map(|p| (p.file_name().unwrap().to_string_lossy().into_owned(), std::fs::metadata(&p).unwrap().modified().unwrap()))
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
        "ablation", "--data", dir.path().to_str().unwrap(), "--setting", "pda", "--pda-classes", "2", "--tasks", "src:tgt",
        "--seeds", "0", "--config", cfg.to_str().unwrap(), "--out", out.to_str().unwrap(), "--quiet",
    ];
    let o = run(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    let results: Vec<serde_json::Value> = serde_json::from_slice(&std::fs::read(out.join("results.json")).unwrap()).unwrap();
    let methods: Vec<&str> = results.iter().map(|r| r["method"].as_str().unwrap()).collect();
    assert_eq!(
        methods,
        ["ablation-tu", "ablation-wy-tu", "ablation-wy-du", "ablation-tu-du", "ablation-mul", "ablation-mul-mmd"]
    );
    assert!(results.iter().all(|r| r["setting"] == "pda" && r["target_accuracy"].is_number()));
    let table = std::fs::read_to_string(out.join("table.md")).unwrap();
    for label in ["| J_TU |", "| w,y + J_TU |", "| w,y + J_DU |", "| J_TU + J_DU |", "| w,y + J_TU + J_DU (MUL) |", "| MUL, class-wise MMD |", "wall time"] {
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
    assert!(std::fs::read_to_string(out.join("table.md")).unwrap().contains("(6 read back from runs/)"));
}
