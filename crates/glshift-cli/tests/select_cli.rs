//! `glshift select` end to end on small fixture folders: what it writes, and bad inputs.

mod common;

use common::*;

fn select_args<'a>(data: &'a str, out: &'a str, cfg: &'a str) -> Vec<&'a str> {
    vec![
        "select", "--data", data, "--source", "src", "--target", "tgt", "--config", cfg, "--out",
        out, "--quiet",
    ]
}

fn json(path: &std::path::Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

#[test]
fn select_writes_the_selection_and_the_chosen_models_files() {
    let dir = tempfile::tempdir().unwrap();
    write_fixture(dir.path());
    let cfg = fast_config(dir.path());
    let out = dir.path().join("sel");
    let o = run(&select_args(
        dir.path().to_str().unwrap(),
        out.to_str().unwrap(),
        cfg.to_str().unwrap(),
    ));
    assert!(o.status.success(), "{}", stderr(&o));
    let sel = json(&out.join("selection.json"));
    let s = &sel["selection"];
    assert_eq!(s["rule"], "safe-entropy");
    let cands = s["candidates"].as_array().unwrap();
    let names: Vec<&str> = cands.iter().map(|c| c["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["source", "mul", "mul-weak"]);
    for c in cands {
        for key in ["iwcv", "dev", "dev_normalised", "snd", "neg_entropy", "circular"] {
            assert!(c["scores"][key].is_f64(), "{} lacks {key}: {}", c["name"], c["scores"]);
        }
        assert!(c["diagnostics"].is_object() && c["config"].is_object());
    }
    let chosen = s["chosen"].as_u64().unwrap() as usize;
    assert_eq!(s["chosen_name"], cands[chosen]["name"]);
    assert!(s["reason"].as_str().unwrap().contains(cands[chosen]["name"].as_str().unwrap()));
    // The labelled fixture gets every candidate's accuracy, after the choice.
    let accs = sel["target_evaluation"]["target_accuracy"].as_array().unwrap();
    assert_eq!(accs.len(), cands.len());
    let typed: glshift::select::SelectionFile =
        serde_json::from_slice(&std::fs::read(out.join("selection.json")).unwrap()).unwrap();
    assert_eq!(typed.selection.chosen, chosen);
    assert_eq!(typed.target_evaluation.map(|e| e.target_accuracy.len()), Some(cands.len()));
    assert_eq!(sel["target_evaluation"]["chosen_accuracy"], accs[chosen]);
    // The chosen model's files, as `fit` writes them.
    let report = json(&out.join("report.json"));
    assert_eq!(report["config"], cands[chosen]["config"]);
    assert_eq!(report["target_accuracy"], accs[chosen]);
    assert_eq!(std::fs::read_to_string(out.join("predictions.csv")).unwrap().lines().count(), 46);
    assert!(out.join("model.glshift").is_file());
    let e = stderr(&o);
    assert!(e.contains("chosen:") && e.contains("evaluation only"), "{e}");
}

#[test]
fn a_candidates_file_and_a_scorer_choose_among_those_candidates_only() {
    let dir = tempfile::tempdir().unwrap();
    write_fixture(dir.path());
    std::fs::remove_file(dir.path().join("tgt_labels.npy")).unwrap();
    let cfg = fast_config(dir.path());
    let cands = dir.path().join("c.toml");
    std::fs::write(&cands, "[[candidate]]\nmethod = \"source\"\nadapt_iters = 0\n\n[[candidate]]\nname = \"strict\"\nmethod = \"mul\"\ntau = 0.95\n").unwrap();
    let out = dir.path().join("sel");
    let mut args =
        select_args(dir.path().to_str().unwrap(), out.to_str().unwrap(), cfg.to_str().unwrap());
    args.extend(["--candidates", cands.to_str().unwrap(), "--scorer", "iwcv"]);
    let o = run(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    let sel = json(&out.join("selection.json"));
    assert_eq!(sel["selection"]["rule"], "iwcv");
    let cands = sel["selection"]["candidates"].as_array().unwrap();
    assert_eq!(cands.len(), 2);
    assert_eq!(cands[1]["name"], "strict");
    assert_eq!(cands[1]["config"]["mul"]["tau"], 0.95);
    // No target labels: no evaluation anywhere.
    assert!(sel.get("target_evaluation").is_none());
    assert!(json(&out.join("report.json")).get("target_accuracy").is_none());
}

#[test]
fn bad_candidate_files_fail_naming_the_file_and_write_nothing() {
    let dir = tempfile::tempdir().unwrap();
    write_fixture(dir.path());
    let cfg = fast_config(dir.path());
    for (text, expect) in [
        ("[[candidate]]\nmethod = \"mul\"\nlamda_du = 0.0\n", "unknown field"),
        ("# nothing here\n", "no candidate"),
        ("[[candidate]\n", "invalid candidates file"),
        ("[[candidate]]\nmethod = \"mul\"\ntau = 2.0\n", "mul.tau"),
    ] {
        let cands = dir.path().join("bad.toml");
        std::fs::write(&cands, text).unwrap();
        let out = dir.path().join("sel-bad");
        let mut args =
            select_args(dir.path().to_str().unwrap(), out.to_str().unwrap(), cfg.to_str().unwrap());
        args.extend(["--candidates", cands.to_str().unwrap()]);
        let o = run(&args);
        assert!(!o.status.success(), "{text:?} was accepted");
        let e = stderr(&o);
        assert!(e.contains("bad.toml") && e.contains(expect), "{text:?}: {e}");
        assert!(out_is_empty(&out), "{text:?} left files in {}", out.display());
    }
    let o = run(&[
        "select",
        "--data",
        dir.path().to_str().unwrap(),
        "--source",
        "src",
        "--target",
        "tgt",
        "--scorer",
        "best",
        "--out",
        "x",
    ]);
    assert!(!o.status.success() && stderr(&o).contains("mean-rank"), "{}", stderr(&o));
}
