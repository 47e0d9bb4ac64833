//! `glshift shift test` and `shift simulate --target-domain` end to end on small fixtures.

mod common;

use common::*;

#[test]
fn shift_test_writes_per_class_p_values_and_a_decision_deterministically() {
    let dir = tempfile::tempdir().unwrap();
    write_fixture(dir.path());
    let cfg = fast_config(dir.path());
    let d = dir.path().to_str().unwrap();
    let out = dir.path().join("test.json");
    let args = ["shift", "test", "--data", d, "--source", "src", "--target", "tgt", "--config", cfg.to_str().unwrap(), "--permutations", "99", "--seed", "3", "--out", out.to_str().unwrap()];
    let o = run(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("total / fit"), "the cost is printed: {}", stderr(&o));
    let r: serde_json::Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    let pc = r["per_class"].as_array().unwrap();
    assert_eq!(pc.len(), 3);
    for c in pc {
        assert!(c["class"].is_string() && c.get("mcmd2").is_some());
        if let Some(p) = c["p_value"].as_f64() {
            assert!((0.01..=1.0).contains(&p), "{c}");
            assert!(c["p_adjusted"].as_f64().unwrap() >= p);
        }
    }
    assert!(r["decision"].is_string() && r["reject_any"].is_boolean());
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
    let o = run(&["shift", "simulate", "--data", d, "--domain", "src", "--target-domain", "tgt", "--prior", "0.5,0.5,0", "--n", "30", "--out", sim.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let rep: serde_json::Value = serde_json::from_slice(&std::fs::read(sim.join("simulation.json")).unwrap()).unwrap();
    assert_eq!(rep["target_domain"], "tgt");
    assert_eq!(rep["n_source"], 60, "the whole source domain");
    assert_eq!(rep["target"]["true_prior"], serde_json::json!([0.5, 0.5, 0.0]));
    let o = run(&["shift", "simulate", "--data", d, "--domain", "src", "--target-domain", "nope", "--prior", "pda", "--out", sim.to_str().unwrap()]);
    assert!(!o.status.success() && stderr(&o).contains("nope"), "{}", stderr(&o));
}
