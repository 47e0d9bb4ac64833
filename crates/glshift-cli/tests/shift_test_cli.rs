//! `glshift shift test` and `shift simulate --target-domain` end to end on small fixtures.

mod common;

use common::*;

/// `fast_config` with half of each source class held out: the fixture's 20 rows a class give
/// 10 hold-out rows, above the test's minimum of 5 a side (the default 20% gives 4).
fn test_config(dir: &std::path::Path) -> std::path::PathBuf {
    let path = fast_config(dir);
    let mut text = std::fs::read_to_string(&path).unwrap();
    text.push_str("[label_shift]\nholdout_fraction = 0.5\n");
    std::fs::write(&path, text).unwrap();
    path
}

/// Runs `shift test` of `source` against `target` in `dir` with `cfg`, into `dir/test.json`.
fn shift_test(
    dir: &std::path::Path,
    source: &str,
    target: &str,
    cfg: &std::path::Path,
) -> (std::process::Output, std::path::PathBuf) {
    let out = dir.join("test.json");
    let d = dir.to_str().unwrap();
    let o = run(&[
        "shift",
        "test",
        "--data",
        d,
        "--source",
        source,
        "--target",
        target,
        "--config",
        cfg.to_str().unwrap(),
        "--permutations",
        "19",
        "--out",
        out.to_str().unwrap(),
    ]);
    (o, out)
}

#[test]
fn shift_test_writes_per_class_p_values_and_a_decision_deterministically() {
    let dir = tempfile::tempdir().unwrap();
    write_fixture(dir.path());
    let cfg = test_config(dir.path());
    let d = dir.path().to_str().unwrap();
    let out = dir.path().join("test.json");
    let args = [
        "shift",
        "test",
        "--data",
        d,
        "--source",
        "src",
        "--target",
        "tgt",
        "--config",
        cfg.to_str().unwrap(),
        "--permutations",
        "99",
        "--seed",
        "3",
        "--out",
        out.to_str().unwrap(),
    ];
    let o = run(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("total / fit"), "the cost is printed: {}", stderr(&o));
    let r: serde_json::Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    let pc = r["per_class"].as_array().unwrap();
    assert_eq!(pc.len(), 3);
    let typed: glshift::records::ShiftTestFile =
        serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    assert_eq!(typed.per_class.len(), 3);
    assert_eq!(typed.reject_any, r["reject_any"].as_bool().unwrap());
    for c in pc {
        assert!(c["class"].is_string() && c.get("mcmd2").is_some());
        if let Some(p) = c["p_value"].as_f64() {
            assert!((0.01..=1.0).contains(&p), "{c}");
            assert!(c["p_adjusted"].as_f64().unwrap() >= p);
        }
    }
    assert!(r["reject_any"].is_boolean());
    assert_eq!(r["min_rows_per_class"], 5);
    let testable = r["testable_classes"].as_u64().unwrap();
    assert!((1..=3).contains(&testable), "the refusal would have stopped a run with none: {r}");
    assert_eq!(pc.iter().filter(|c| c["testable"] == true).count() as u64, testable);
    let decision = r["decision"].as_str().unwrap();
    assert!(
        decision.contains("testable") && decision.contains(" of 3 "),
        "the decision says how many classes were tested: {decision}"
    );
    assert!(stderr(&o).contains(decision), "{}", stderr(&o));
    assert!(r["seconds"]["fit"].as_f64().unwrap() > 0.0);
    let first = r["per_class"].clone();
    assert!(run(&args).status.success());
    let again: serde_json::Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    assert_eq!(first, again["per_class"], "same seed, same p-values");
    // A folder in place of the report is refused before any work.
    let o = run(&["shift", "test", "--data", d, "--source", "src", "--target", "tgt", "--out", d]);
    assert!(!o.status.success() && stderr(&o).contains("--out"), "{}", stderr(&o));
}

#[test]
fn simulate_target_domain_draws_the_target_from_the_other_domain() {
    let dir = tempfile::tempdir().unwrap();
    write_fixture(dir.path());
    let d = dir.path().to_str().unwrap();
    let sim = dir.path().join("sim");
    let o = run(&[
        "shift",
        "simulate",
        "--data",
        d,
        "--domain",
        "src",
        "--target-domain",
        "tgt",
        "--prior",
        "0.5,0.5,0",
        "--n",
        "30",
        "--out",
        sim.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let rep: serde_json::Value =
        serde_json::from_slice(&std::fs::read(sim.join("simulation.json")).unwrap()).unwrap();
    assert_eq!(rep["target_domain"], "tgt");
    assert_eq!(rep["n_source"], 60, "the whole source domain");
    assert_eq!(rep["target"]["true_prior"], serde_json::json!([0.5, 0.5, 0.0]));
    let o = run(&[
        "shift",
        "simulate",
        "--data",
        d,
        "--domain",
        "src",
        "--target-domain",
        "nope",
        "--prior",
        "pda",
        "--out",
        sim.to_str().unwrap(),
    ]);
    assert!(!o.status.success() && stderr(&o).contains("nope"), "{}", stderr(&o));
}

#[test]
fn shift_test_refuses_a_target_that_repeats_source_rows_before_the_fit() {
    let dir = tempfile::tempdir().unwrap();
    write_fixture(dir.path());
    let cfg = test_config(dir.path());
    let (o, out) = shift_test(dir.path(), "src", "src", &cfg);
    let e = stderr(&o);
    assert!(!o.status.success(), "{e}");
    assert!(
        e.contains("60 of the 60 rows of target 'src'")
            && e.contains("also occur in source 'src'")
            && e.contains("src_features.npy"),
        "{e}"
    );
    assert!(!e.contains("cost: fit"), "refused before the fit: {e}");
    assert!(!out.exists(), "no report is written");
    // Part of the source copied into an otherwise new target: the count, not the names, decides.
    let (xs, ys) = blobs(60, 0.0);
    let (xt, yt) = blobs(45, 0.3);
    let x = ndarray::concatenate![ndarray::Axis(0), xt, xs.slice(ndarray::s![..2, ..])];
    let y = ndarray::concatenate![ndarray::Axis(0), yt, ys.slice(ndarray::s![..2])];
    write_domain(dir.path(), "mixed", &x, Some(&y));
    let (o, out) = shift_test(dir.path(), "src", "mixed", &cfg);
    assert!(
        !o.status.success() && stderr(&o).contains("2 of the 47 rows of target 'mixed'"),
        "{}",
        stderr(&o)
    );
    assert!(!out.exists());
}

#[test]
fn shift_test_refuses_inputs_with_no_testable_class() {
    let dir = tempfile::tempdir().unwrap();
    write_fixture(dir.path());
    // A one-row target: refused before the fit, naming the minimum.
    let (xt, yt) = blobs(45, 0.3);
    write_domain(
        dir.path(),
        "one",
        &xt.slice(ndarray::s![..1, ..]).to_owned(),
        Some(&yt.slice(ndarray::s![..1]).to_owned()),
    );
    let cfg = test_config(dir.path());
    let (o, out) = shift_test(dir.path(), "src", "one", &cfg);
    let e = stderr(&o);
    assert!(
        !o.status.success()
            && e.contains("target 'one'")
            && e.contains("1 row(s)")
            && e.contains("at least 5 rows"),
        "{e}"
    );
    assert!(!out.exists(), "no report is written");
    // The default 20% hold-out keeps 4 source rows a class: after the fit, every class is
    // below the minimum on the source side, and the refusal names the counts.
    let (o, out) = shift_test(dir.path(), "src", "tgt", &fast_config(dir.path()));
    let e = stderr(&o);
    assert!(
        !o.status.success()
            && e.contains("no class can be tested")
            && e.contains("at least 5 rows"),
        "{e}"
    );
    assert!(
        e.contains("a 4/") && e.contains("holdout_fraction"),
        "the per-class counts and the remedy: {e}"
    );
    assert!(!out.exists(), "no report is written");
}
