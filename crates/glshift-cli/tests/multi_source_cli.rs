//! `glshift fit --source a,b`: several source domains pooled, the same fit for any order of the
//! names, each domain in the report, and clear errors for bad source lists.

mod common;

use std::path::Path;

use common::*;

/// `src` and `tgt` of the common fixture, plus a second source `src2` (shifted blobs) and a
/// source `wide` of another feature width.
fn fixture(dir: &Path) {
    write_fixture(dir);
    let (x2, y2) = blobs(48, 0.15);
    write_domain(dir, "src2", &x2, Some(&y2));
    let wide = ndarray::Array2::<f32>::zeros((30, 5));
    let yw = ndarray::Array1::from_shape_fn(30, |i| (i % 3) as i64);
    write_domain(dir, "wide", &wide, Some(&yw));
}

fn fit(dir: &Path, sources: &str, out: &str) -> std::process::Output {
    on_sources(dir, "fit", sources, out)
}

/// `glshift COMMAND` (`fit` or `select`) on `sources` → `tgt` with the fast settings.
fn on_sources(dir: &Path, command: &str, sources: &str, out: &str) -> std::process::Output {
    let cfg = fast_config(dir);
    let d = dir.to_str().unwrap();
    let out = dir.join(out);
    let args = [
        command,
        "--data",
        d,
        "--source",
        sources,
        "--target",
        "tgt",
        "--config",
        cfg.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--quiet",
    ];
    run(&args)
}

fn report(dir: &Path, out: &str) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(dir.join(out).join("report.json")).unwrap()).unwrap()
}

#[test]
fn several_sources_pool_in_any_order_and_the_report_gives_each_domain() {
    let dir = tempfile::tempdir().unwrap();
    fixture(dir.path());
    for (sources, out) in [("src,src2", "ab"), ("src2, src", "ba")] {
        let o = fit(dir.path(), sources, out);
        assert!(o.status.success(), "{}", stderr(&o));
    }
    let (ab, ba) = (report(dir.path(), "ab"), report(dir.path(), "ba"));
    assert_eq!(ab["source"], "src+src2");
    assert_eq!(ab["source_domains"], ba["source_domains"]);
    assert_eq!(ab["n_source"], 108);
    let preds = |o: &str| std::fs::read(dir.path().join(o).join("predictions.csv")).unwrap();
    assert_eq!(preds("ab"), preds("ba"), "the order of the names changes nothing");
    let domains = ab["source_domains"].as_array().unwrap();
    assert_eq!(domains.len(), 2);
    assert_eq!(
        (domains[0]["name"].as_str(), domains[0]["n_rows"].as_u64()),
        (Some("src"), Some(60))
    );
    assert_eq!(
        (domains[1]["name"].as_str(), domains[1]["n_rows"].as_u64()),
        (Some("src2"), Some(48))
    );
    for d in domains {
        // The hold-out holds each domain's share of each class (20% of 20 or 16 rows).
        let n = d["n_rows"].as_u64().unwrap() as f64;
        assert_eq!(d["n_holdout"].as_u64().unwrap() as f64, 3.0 * (0.2 * n / 3.0).round(), "{d}");
        let acc = d["holdout_accuracy"].as_f64().unwrap();
        assert!((0.0..=1.0).contains(&acc), "{d}");
    }
    assert_eq!(ab["n_source_holdout"], 21);
    // One source is the single-source fit: no per-domain section.
    let o = fit(dir.path(), "src", "one");
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(report(dir.path(), "one").get("source_domains").is_none());
}

#[test]
fn bad_source_lists_are_refused_by_name_and_write_nothing() {
    let dir = tempfile::tempdir().unwrap();
    fixture(dir.path());
    for (sources, expect) in [
        ("src,src", "'src' is named twice"),
        ("src,tgt", "the target 'tgt' cannot also be a source"),
        ("src,wide", "wide"),
        ("src,", "empty domain name"),
        ("src,nope", "nope"),
    ] {
        let o = fit(dir.path(), sources, "bad");
        assert!(!o.status.success(), "{sources}");
        let e = stderr(&o);
        assert!(e.contains(expect), "{sources}: {e}");
        assert!(out_is_empty(&dir.path().join("bad")), "{sources}");
    }
}

/// `bench --setting msda`: each target with every other domain pooled, the same run as
/// `fit --source a,b`; `--targets` chooses the targets; misuse is refused by name.
#[test]
fn bench_msda_runs_leave_one_domain_out_tasks_as_the_pooled_fit() {
    let dir = tempfile::tempdir().unwrap();
    write_fixture(dir.path());
    let (x2, y2) = blobs(48, 0.15);
    write_domain(dir.path(), "src2", &x2, Some(&y2));
    let cfg = fast_config(dir.path());
    let (d, c) = (dir.path().to_str().unwrap(), cfg.to_str().unwrap());
    let grid = dir.path().join("grid");
    let g = grid.to_str().unwrap();
    let bench = |extra: &[&str]| {
        let mut args = vec!["bench", "--data", d, "--config", c, "--out", g, "--quiet"];
        args.extend_from_slice(extra);
        run(&args)
    };
    let o = bench(&["--setting", "msda", "--targets", "tgt", "--seeds", "0", "--methods", "mul"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let runs: Vec<String> = std::fs::read_dir(grid.join("runs"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(runs, ["msda__mul__src+src2__tgt__seed0.json"]);
    let rec: serde_json::Value =
        serde_json::from_slice(&std::fs::read(grid.join("runs").join(&runs[0])).unwrap()).unwrap();
    assert_eq!((rec["setting"].as_str(), rec["source"].as_str()), (Some("msda"), Some("src+src2")));
    let o = fit(dir.path(), "src,src2", "pooled");
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(rec["target_accuracy"], report(dir.path(), "pooled")["target_accuracy"]);
    for (extra, expect) in [
        (&["--setting", "msda", "--targets", "nope"][..], "nope"),
        (&["--setting", "msda", "--tasks", "src:tgt"][..], "--targets"),
        (&["--setting", "uda", "--targets", "tgt"][..], "msda"),
    ] {
        let o = bench(extra);
        assert!(!o.status.success(), "{extra:?}");
        assert!(stderr(&o).contains(expect), "{extra:?}: {}", stderr(&o));
    }
    let o = run(&[
        "fit",
        "--data",
        d,
        "--source",
        "src",
        "--target",
        "tgt",
        "--setting",
        "msda",
        "--out",
        g,
    ]);
    assert!(!o.status.success() && stderr(&o).contains("--source a,b"), "{}", stderr(&o));
}

/// `select --source a,b`: every candidate is the pooled fit; the selection names the pooled
/// source and the chosen model's report gives each domain.
#[test]
fn select_takes_several_sources_pooled() {
    let dir = tempfile::tempdir().unwrap();
    fixture(dir.path());
    let o = on_sources(dir.path(), "select", "src2,src", "sel");
    assert!(o.status.success(), "{}", stderr(&o));
    let out = dir.path().join("sel");
    let sel: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("selection.json")).unwrap()).unwrap();
    assert_eq!(sel["source"], "src+src2");
    assert_eq!(sel["selection"]["candidates"].as_array().unwrap().len(), 3);
    let rep = report(dir.path(), "sel");
    assert_eq!(rep["source_domains"].as_array().unwrap().len(), 2);
}
