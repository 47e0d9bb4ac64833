//! `glshift bench` survives SIGKILL: finished records stay readable and a re-run resumes
//! without redoing them.

mod common;

use std::time::{Duration, Instant};

use common::*;

fn records(dir: &std::path::Path) -> Vec<(std::path::PathBuf, std::time::SystemTime)> {
    let Ok(rd) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut out: Vec<_> = rd
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .map(|p| {
            let t = std::fs::metadata(&p).unwrap().modified().unwrap();
            (p, t)
        })
        .collect();
    out.sort();
    out
}

#[test]
fn killed_bench_keeps_finished_records_and_resumes() {
    let dir = tempfile::tempdir().unwrap();
    write_fixture(dir.path());
    // Slow enough per run that the kill lands in the middle of the grid.
    let cfg = dir.path().join("slow.toml");
    std::fs::write(&cfg, "pretrain_iters = 60\npretrain_patience = 1000\nadapt_iters = 150\n[network]\nhidden = [64]\n").unwrap();
    let out = dir.path().join("bench");
    let args = [
        "bench",
        "--data",
        dir.path().to_str().unwrap(),
        "--tasks",
        "src:tgt,tgt:src",
        "--methods",
        "source,mul",
        "--seeds",
        "0,1,2",
        "--config",
        cfg.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--quiet",
    ];
    let mut child = glshift().args(args).spawn().unwrap();
    let runs = out.join("runs");
    let started = Instant::now();
    while records(&runs).len() < 2 && started.elapsed() < Duration::from_secs(120) {
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap(); // SIGKILL on Unix
    child.wait().unwrap();
    let before = records(&runs);
    assert!(
        !before.is_empty() && before.len() < 12,
        "kill should land mid-grid: {} records",
        before.len()
    );
    for (p, _) in &before {
        let v: serde_json::Value =
            serde_json::from_slice(&std::fs::read(p).unwrap()).expect("complete record");
        assert!(v["target_accuracy"].is_number());
    }
    // Temporary files of a killed write may remain under runs/; they are never read back.

    let o = run(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    let after = records(&runs);
    assert_eq!(after.len(), 12);
    for (p, t) in &before {
        let now = after.iter().find(|(q, _)| q == p).unwrap().1;
        assert_eq!(*t, now, "{} was redone", p.display());
    }
    let results: Vec<serde_json::Value> =
        serde_json::from_slice(&std::fs::read(out.join("results.json")).unwrap()).unwrap();
    assert_eq!(results.len(), 12);
    // The resuming call's wall time misses the records it read back; the table also gives the
    // runs' own times, summed over every record.
    let total: f64 = results.iter().map(|r| r["elapsed_seconds"].as_f64().unwrap()).sum();
    let table = std::fs::read_to_string(out.join("table.md")).unwrap();
    let expected = format!("({} read back from runs/)", before.len());
    assert!(table.contains(&expected), "{table}");
    assert!(table.contains(&format!("the runs' own times sum to {total:.0} s")), "{table}");
}

#[test]
fn bench_redoes_records_made_with_other_settings() {
    let dir = tempfile::tempdir().unwrap();
    write_fixture(dir.path());
    let out = dir.path().join("bench");
    let bench = |cfg_text: &str| {
        let cfg = dir.path().join("cfg.toml");
        std::fs::write(&cfg, cfg_text).unwrap();
        let o = run(&[
            "bench",
            "--data",
            dir.path().to_str().unwrap(),
            "--tasks",
            "src:tgt",
            "--methods",
            "source",
            "--seeds",
            "0",
            "--config",
            cfg.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--quiet",
        ]);
        assert!(o.status.success(), "{}", stderr(&o));
        let rec = out.join("runs/uda__source__src__tgt__seed0.json");
        let v: serde_json::Value = serde_json::from_slice(&std::fs::read(rec).unwrap()).unwrap();
        (v["config"]["adapt_iters"].clone(), stderr(&o))
    };
    let (iters, _) = bench("pretrain_iters = 20\nadapt_iters = 5\n[network]\nhidden = [8]\n");
    assert_eq!(iters, 5);
    let (iters, err) = bench("pretrain_iters = 20\nadapt_iters = 7\n[network]\nhidden = [8]\n");
    assert_eq!(iters, 7, "a record made with other settings must be redone");
    assert!(err.contains("made with other settings"), "{err}");
    let (iters, err) = bench("pretrain_iters = 20\nadapt_iters = 7\n[network]\nhidden = [8]\n");
    assert_eq!(iters, 7);
    assert!(!err.contains("made with other settings"), "same settings must resume: {err}");
}

#[test]
fn bench_keeps_model_files_only_when_asked() {
    let dir = tempfile::tempdir().unwrap();
    write_fixture(dir.path());
    let cfg = fast_config(dir.path());
    let (d, c) = (dir.path().to_str().unwrap(), cfg.to_str().unwrap());
    let models = |out: &std::path::Path| -> Vec<std::path::PathBuf> {
        let mut v: Vec<_> = std::fs::read_dir(out.join("runs"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "glshift"))
            .collect();
        v.sort();
        v
    };
    let plain = dir.path().join("plain");
    let o = run(&[
        "bench",
        "--data",
        d,
        "--tasks",
        "src:tgt",
        "--methods",
        "source,mul",
        "--seeds",
        "0",
        "--config",
        c,
        "--out",
        plain.to_str().unwrap(),
        "--quiet",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(models(&plain).is_empty(), "models written without --keep-models");
    // Asked on a resumed grid: the runs without a model are redone so that each gets one.
    let o = run(&[
        "bench",
        "--data",
        d,
        "--tasks",
        "src:tgt",
        "--methods",
        "source,mul",
        "--seeds",
        "0",
        "--config",
        c,
        "--out",
        plain.to_str().unwrap(),
        "--quiet",
        "--keep-models",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let kept = models(&plain);
    assert_eq!(kept.len(), 2, "{kept:?}");
    // Each kept model predicts the target exactly as its run scored it.
    for m in &kept {
        let pred = dir.path().join(format!("pred-{}", m.file_stem().unwrap().to_str().unwrap()));
        let o = run(&[
            "predict",
            "--model",
            m.to_str().unwrap(),
            "--data",
            d,
            "--domain",
            "tgt",
            "--out",
            pred.to_str().unwrap(),
            "--quiet",
        ]);
        assert!(o.status.success(), "{}", stderr(&o));
        let report: serde_json::Value =
            serde_json::from_slice(&std::fs::read(pred.join("report.json")).unwrap()).unwrap();
        let record: serde_json::Value =
            serde_json::from_slice(&std::fs::read(m.with_extension("json")).unwrap()).unwrap();
        assert_eq!(report["accuracy"], record["target_accuracy"], "{}", m.display());
    }
}

#[test]
fn a_diverging_run_is_kept_as_failed_and_the_grid_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    write_fixture(dir.path());
    // DANN's mini-batch SGD at an absurd learning rate: its adaptation overflows; `source`
    // does not read `baselines.lr` and finishes.
    let cfg = dir.path().join("cfg.toml");
    std::fs::write(&cfg, "pretrain_iters = 20\nadapt_iters = 5\n[network]\nhidden = [8]\n[baselines]\nlr = 1e30\niterations = 20\n").unwrap();
    let out = dir.path().join("bench");
    let args = [
        "bench",
        "--data",
        dir.path().to_str().unwrap(),
        "--tasks",
        "src:tgt",
        "--methods",
        "source,dann",
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
    let err = stderr(&o);
    assert!(err.contains("dann src→tgt seed 0") && err.contains("kept as a failed run"), "{err}");
    assert!(
        err.contains("`baselines.lr` (now 1e30"),
        "the advice names DANN's own learning rate: {err}"
    );
    // Only real accuracies in results.json; the failure apart, with its error.
    let results: Vec<serde_json::Value> =
        serde_json::from_slice(&std::fs::read(out.join("results.json")).unwrap()).unwrap();
    assert_eq!(
        results.iter().map(|r| r["method"].as_str().unwrap()).collect::<Vec<_>>(),
        ["source"]
    );
    let failed: Vec<serde_json::Value> =
        serde_json::from_slice(&std::fs::read(out.join("failed_runs.json")).unwrap()).unwrap();
    assert_eq!(failed.len(), 1);
    assert_eq!(failed[0]["method"], "dann");
    assert!(failed[0]["error"].as_str().unwrap().contains("training diverged"), "{}", failed[0]);
    let table = std::fs::read_to_string(out.join("table.md")).unwrap();
    assert!(table.lines().any(|l| l == "| dann | diverged | — |"), "{table}");
    assert!(
        table.contains("1 run diverged") && table.contains("- dann src→tgt seed 0: "),
        "{table}"
    );
    // Resumed: the failure is read back, not retrained.
    let fpath = out.join("runs/uda__dann__src__tgt__seed0.failed.json");
    let before = std::fs::metadata(&fpath).unwrap().modified().unwrap();
    let o = run(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(std::fs::metadata(&fpath).unwrap().modified().unwrap(), before);
    assert!(std::fs::read_to_string(out.join("table.md"))
        .unwrap()
        .contains("(2 read back from runs/)"));
}
