//! Candidate files and the checks of `SelectParams`.

use super::*;

fn write(text: &str) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cands.toml");
    std::fs::write(&path, text).unwrap();
    (dir, path)
}

#[test]
fn a_candidates_file_reads_methods_and_overrides() {
    let (_d, path) = write("[[candidate]]\nmethod = \"source\"\n\n[[candidate]]\nname = \"strong\"\nmethod = \"mul\"\nlambda_tu = 2.0\ntau = 0.95\n\n[[candidate]]\nmethod = \"mul\"\nlambda_du = 0.0\n");
    let base = FitConfig::default();
    let c = read_candidates_file(&path, &base).unwrap();
    assert_eq!(c.len(), 3);
    assert_eq!(c[0].label(), "source");
    assert_eq!(c[1].label(), "strong");
    assert_eq!(c[2].label(), "mul[lambda_du=0]");
    let cfg = c[1].apply(&base);
    assert_eq!(
        (cfg.method, cfg.mul.lambda_tu, cfg.mul.tau, cfg.mul.lambda_du),
        (MethodKind::Mul, 2.0, 0.95, base.mul.lambda_du)
    );
}

#[test]
fn bad_candidate_files_are_errors_naming_the_file_and_the_problem() {
    let base = FitConfig::default();
    let cases = [
        ("[[candidate]\nmethod = \"mul\"\n", "invalid candidates file"),
        ("[[candidate]]\nmethod = \"mul\"\nlambda = 1.0\n", "unknown field"),
        ("[[candidates]]\nmethod = \"mul\"\n", "unknown field"),
        ("", "no candidate"),
        ("[[candidate]]\nmethod = \"nope\"\n", "invalid candidates file"),
        ("[[candidate]]\nmethod = \"mul\"\ntau = 1.5\n", "mul.tau"),
        ("[[candidate]]\nmethod = \"mul\"\n[[candidate]]\nmethod = \"mul\"\n", "repeats a name"),
    ];
    for (text, expect) in cases {
        let (_d, path) = write(text);
        let e = read_candidates_file(&path, &base).unwrap_err().to_string();
        assert!(e.contains("cands.toml") && e.contains(expect), "{text:?}: {e}");
    }
    let missing = std::path::Path::new("/nonexistent/cands.toml");
    assert!(read_candidates_file(missing, &base).unwrap_err().to_string().contains("cands.toml"));
}

#[test]
fn params_check_refuses_empty_lists_and_no_holdout_and_the_defaults_pass() {
    let checked = SelectParams::default().check().unwrap();
    assert_eq!(checked.configs().len(), default_candidates().len());
    assert_eq!(checked.rule(), SelectRule::SafeEntropy);
    // The source candidate is the pre-trained network; the others are MUL over the same base.
    assert_eq!(checked.configs()[0].adapt_iters, 0);
    assert!(SelectParams::default().candidates(vec![]).check().is_err());
    let mut base = FitConfig::default();
    base.label_shift.confusion = crate::config::ConfusionRows::Train;
    assert!(SelectParams::new(base).check().is_err());
    let seeded = SelectParams::default().seed(9).check().unwrap();
    assert!(seeded.configs().iter().all(|c| c.seed == 9));
}
