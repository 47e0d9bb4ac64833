//! `write_run_report` / `write_bench_report` / the IW ablation end to end on small synthetic
//! runs: every figure file is valid, the page is self-contained, bad folders are clear errors
//! that leave nothing behind.

mod common;

use std::path::Path;

use common::assert_figure;
use glshift::config::FitConfig;
use glshift::methods::MethodKind;
use glshift::pipeline;
use glshift_experiments::synthetic::{generate, SyntheticConfig};
use glshift_report::run::{write_run_report, FigureOptions};
use glshift_report::tsne::TsneParams;

fn fast(method: MethodKind) -> FitConfig {
    let mut cfg = FitConfig { method, pretrain_iters: 40, adapt_iters: 30, ..Default::default() };
    cfg.network.hidden = vec![32, 16];
    cfg
}

/// A run folder as `glshift fit` leaves it, on a 4-class synthetic task.
fn make_run(dir: &Path, method: MethodKind) {
    let task = generate(&SyntheticConfig {
        n_classes: 4,
        n_source: 240,
        n_target: 160,
        ..Default::default()
    })
    .unwrap();
    let out = pipeline::run(&task.source, &task.target, &fast(method), &mut |_| {}).unwrap();
    let files = vec![(dir.join("report.json"), serde_json::to_vec_pretty(&out.report).unwrap())];
    glshift::output::write_files_atomically_with(out.stage_embedding_files(dir).unwrap(), &files)
        .unwrap();
}

fn opts() -> FigureOptions {
    FigureOptions { tsne: TsneParams { epochs: 300, ..Default::default() }, max_tsne_points: 300 }
}

fn listing(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> =
        walk(dir).into_iter().map(|p| p.strip_prefix(dir).unwrap().display().to_string()).collect();
    v.sort();
    v
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    std::fs::read_dir(dir)
        .unwrap()
        .flat_map(|e| {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(&p)
            } else {
                vec![p]
            }
        })
        .collect()
}

#[test]
fn run_report_writes_every_figure_and_a_self_contained_page() {
    let tmp = tempfile::tempdir().unwrap();
    let (run, base) = (tmp.path().join("mul"), tmp.path().join("source"));
    make_run(&run, MethodKind::Mul);
    make_run(&base, MethodKind::Source);
    let w = write_run_report(&run, Some(&base), &opts()).unwrap();
    // c = 4: cell 72, heatmap 528 × 408 (all classes present in both domains).
    assert_figure(&run, "dst_heatmap", 528, 408, 16);
    assert_figure(&run, "dtt_heatmap", 528, 408, 16);
    assert_figure(&run, "tsne_target", 900, 680, 100);
    assert_figure(&run, "tsne_joint", 900, 680, 100);
    assert_figure(&run, "prior", 900, 620, 12);
    assert_figure(&run, "training_curves", 900, 760, 10);
    assert_eq!(w.figures.len(), 12);
    let html = std::fs::read_to_string(&w.html).unwrap();
    assert_eq!(html.matches("src=\"data:image/png;base64,").count(), 6, "all six figures embedded");
    assert!(!html.contains("src=\"http") && !html.contains("src=\"figures/"), "no external image");
    for needle in [
        "Target J_b/J_w: mul",
        "Mean diagonal of Dˢᵗ",
        "target accuracy (%)",
        "Per class",
        "Configuration",
    ] {
        assert!(html.contains(needle), "page lacks {needle:?}");
    }
}

#[test]
fn run_report_of_the_same_run_twice_is_identical() {
    let tmp = tempfile::tempdir().unwrap();
    make_run(tmp.path(), MethodKind::Mul);
    write_run_report(tmp.path(), None, &opts()).unwrap();
    let first = std::fs::read(tmp.path().join("report.html")).unwrap();
    write_run_report(tmp.path(), None, &opts()).unwrap();
    assert!(
        first == std::fs::read(tmp.path().join("report.html")).unwrap(),
        "same run and seed, same page"
    );
}

#[test]
fn run_without_saved_representations_gets_a_page_without_tsne() {
    let tmp = tempfile::tempdir().unwrap();
    make_run(tmp.path(), MethodKind::Mul);
    std::fs::remove_file(tmp.path().join("z_source.npy")).unwrap();
    let w = write_run_report(tmp.path(), None, &opts()).unwrap();
    assert!(w.notes.iter().any(|n| n.contains("no t-SNE")), "{:?}", w.notes);
    assert!(!tmp.path().join("figures/tsne_target.png").exists());
    assert!(tmp.path().join("figures/dst_heatmap.png").exists());
}

#[test]
fn missing_or_corrupt_report_json_is_an_error_naming_it_and_writes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let err = write_run_report(tmp.path(), None, &opts()).unwrap_err().to_string();
    assert!(err.contains("report.json"), "{err}");
    std::fs::write(tmp.path().join("report.json"), b"{\"method\": \"mul\", trunc").unwrap();
    let err = write_run_report(tmp.path(), None, &opts()).unwrap_err().to_string();
    assert!(err.contains("report.json") && err.contains("not a glshift fit report"), "{err}");
    assert_eq!(listing(tmp.path()), vec!["report.json"], "no partial output");
    let err = write_run_report(&tmp.path().join("nope"), None, &opts()).unwrap_err().to_string();
    assert!(err.contains("nope"), "{err}");
}

#[test]
fn corrupt_representation_file_is_an_error_naming_it_and_writes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    make_run(tmp.path(), MethodKind::Mul);
    std::fs::write(tmp.path().join("z_target.npy"), b"\x93NUMPY garbage").unwrap();
    let before = listing(tmp.path());
    let err = write_run_report(tmp.path(), None, &opts()).unwrap_err().to_string();
    assert!(err.contains("z_target.npy"), "{err}");
    assert_eq!(listing(tmp.path()), before);
}

#[test]
fn report_json_reads_back_as_the_fit_report_that_wrote_it() {
    let tmp = tempfile::tempdir().unwrap();
    make_run(tmp.path(), MethodKind::Mul);
    let path = tmp.path().join("report.json");
    let written: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    let report = glshift_report::run::read_summary(&path).unwrap();
    assert!(!report.history.is_empty());
    assert_eq!(
        serde_json::to_value(&report).unwrap(),
        written,
        "read and written again, report.json is unchanged"
    );
    // A report of an older version without the optional fields still reads.
    let mut old = written.clone();
    for key in [
        "protocol",
        "history",
        "floored_classes",
        "predicted_class_counts",
        "elapsed_seconds",
        "embedding_metrics",
    ] {
        old.as_object_mut().unwrap().remove(key);
    }
    std::fs::write(&path, serde_json::to_vec(&old).unwrap()).unwrap();
    let r = glshift_report::run::read_summary(&path).unwrap();
    assert_eq!(glshift_report::run::setting(&r), "uda");
    assert!(r.history.is_empty() && r.embedding_metrics.is_none());
}

#[test]
fn report_json_with_wrong_vector_lengths_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    make_run(tmp.path(), MethodKind::Mul);
    let path = tmp.path().join("report.json");
    let mut v: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    v["source_prior"] = serde_json::json!([1.0]);
    std::fs::write(&path, serde_json::to_vec(&v).unwrap()).unwrap();
    let err = write_run_report(tmp.path(), None, &opts()).unwrap_err().to_string();
    assert!(err.contains("report.json") && err.contains("source_prior"), "{err}");
}

#[test]
fn bench_report_has_tables_and_bars_per_setting() {
    let tmp = tempfile::tempdir().unwrap();
    let mut records = Vec::new();
    for (setting, m, acc) in
        [("uda", "source", 0.85), ("uda", "mul", 0.9), ("pda", "source", 0.8), ("pda", "mul", 0.88)]
    {
        for (s, t) in [("amazon", "webcam"), ("webcam", "dslr")] {
            for seed in 0..2 {
                records.push(serde_json::json!({
                    "method": m, "setting": setting, "source": s, "target": t, "seed": seed,
                    "target_accuracy": acc + 0.01 * seed as f64, "prior_l1_error": if m == "mul" { Some(0.1) } else { None },
                    "source_target_prior_l1": 0.3, "source_class_counts": [1], "target_class_counts": [1], "elapsed_seconds": 1.0
                }));
            }
        }
    }
    // mul webcam→dslr uda seed 1 diverged: no record, a failed run instead.
    records.retain(|r| {
        !(r["method"] == "mul"
            && r["setting"] == "uda"
            && r["source"] == "webcam"
            && r["seed"] == 1)
    });
    let failed = serde_json::json!([{"method": "mul", "setting": "uda", "source": "webcam", "target": "dslr", "seed": 1,
        "error": "numerical failure in Adapt iteration 9: the transfer term is NaN", "config": null}]);
    std::fs::write(tmp.path().join("failed_runs.json"), serde_json::to_vec(&failed).unwrap())
        .unwrap();
    std::fs::write(tmp.path().join("results.json"), serde_json::to_vec(&records).unwrap()).unwrap();
    let w = glshift_report::bench::write_bench_report(tmp.path()).unwrap();
    assert_figure(tmp.path(), "bench_bars_uda", 600, 460, 8);
    assert_figure(tmp.path(), "bench_bars_pda", 600, 460, 8);
    let html = std::fs::read_to_string(w.html).unwrap();
    assert!(html.contains("Setting uda") && html.contains("Setting pda") && html.contains("A→W"));
    assert!(html.contains("90.5 ± 0.7"), "mean ± std over seeds of mul A→W uda");
    // The diverged run is named, and its task's cell is the seed that finished (never a 0).
    assert!(
        html.contains("1 run(s) diverged")
            && html.contains("uda mul webcam→dslr seed 1: numerical failure"),
        "{html}"
    );
    assert!(html.contains("90.0 ± 0.0 (1 diverged)"), "mul W→D uda over its one finished seed");
}

#[test]
fn corrupt_bench_results_is_an_error_naming_the_file() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("results.json"), b"[{\"method\": 3}]").unwrap();
    let err = glshift_report::bench::write_bench_report(tmp.path()).unwrap_err().to_string();
    assert!(err.contains("results.json"), "{err}");
    assert!(!tmp.path().join("report.html").exists());
    // A valid results.json beside a damaged failed_runs.json: the error names the latter.
    let ok = serde_json::json!([{"method": "source", "setting": "uda", "source": "a", "target": "w", "seed": 0, "target_accuracy": 0.5}]);
    std::fs::write(tmp.path().join("results.json"), serde_json::to_vec(&ok).unwrap()).unwrap();
    std::fs::write(tmp.path().join("failed_runs.json"), b"[{\"method\": ").unwrap();
    let err = glshift_report::bench::write_bench_report(tmp.path()).unwrap_err().to_string();
    assert!(err.contains("failed_runs.json"), "{err}");
    assert!(!tmp.path().join("report.html").exists());
}

#[test]
fn iw_ablation_draws_both_models_on_a_2d_representation() {
    // Training is glshift_experiments::iw's (tested there); the report draws what it returns.
    let task = generate(&SyntheticConfig {
        n_classes: 4,
        n_source: 240,
        n_target: 160,
        ..Default::default()
    })
    .unwrap();
    let mut cfg = fast(MethodKind::Mul);
    cfg.network.hidden = vec![16];
    let opts = glshift_experiments::iw::IwOptions {
        hidden: vec![16, 2],
        grid_res: 40,
        ..Default::default()
    };
    let a = glshift_experiments::iw::iw_ablation(&task.source, &task.target, &cfg, &opts).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    glshift_report::iw::write(&a, tmp.path()).unwrap();
    assert_figure(tmp.path(), "iw_boundary", 1090, 520, 2 * 40 * 40);
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(tmp.path().join("iw_ablation.json")).unwrap())
            .unwrap();
    assert_eq!(json["runs"].as_array().unwrap().len(), 2);
}

#[test]
fn the_prior_figure_draws_the_fits_own_bootstrap_interval() {
    let tmp = tempfile::tempdir().unwrap();
    make_run(tmp.path(), MethodKind::Mul);
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(tmp.path().join("report.json")).unwrap()).unwrap();
    assert!(report["estimated_target_prior_ci_low"].is_array(), "the fit reports an interval");
    let w = write_run_report(tmp.path(), None, &opts()).unwrap();
    assert!(!w.notes.iter().any(|n| n.contains("no bootstrap interval")), "{:?}", w.notes);
    let html = std::fs::read_to_string(&w.html).unwrap();
    assert!(
        html.contains("90% bootstrap interval (200 resamples)"),
        "the caption names the interval"
    );
    // Without the interval fields (a report of an older fit), the figure says it has none.
    let mut old = report.clone();
    old.as_object_mut().unwrap().remove("estimated_target_prior_ci_low");
    old.as_object_mut().unwrap().remove("estimated_target_prior_ci_high");
    std::fs::write(tmp.path().join("report.json"), serde_json::to_vec(&old).unwrap()).unwrap();
    let w = write_run_report(tmp.path(), None, &opts()).unwrap();
    assert!(w.notes.iter().any(|n| n.contains("no bootstrap interval")), "{:?}", w.notes);
}
