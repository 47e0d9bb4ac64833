//! Files kept from fuzzing the readers (see docs/fuzzing.md), run through the same parsing
//! functions as the fuzz targets in `fuzz/fuzz_targets/`:
//! - `tests/fuzz_regressions/<target>/`: minimised inputs that once crashed, hung or blew
//!   up memory; each must now give an error naming the file (or parse consistently);
//! - `tests/fuzz_seeds/<target>/`: the hand-made valid seed files (`fuzz/make_seeds.py`);
//!   each must parse to a non-empty, finite matrix (`.npy` label files: to labels).
//!
//! As under libFuzzer, a panic fails the test even when the library catches it (the `.mat`
//! reader wraps its parser in `catch_unwind` as a last line of defence), and any single
//! allocation above [`capped_alloc::MAX_ALLOCATION`] aborts the test (like `-malloc_limit_mb`).

use std::cell::Cell;
use std::path::{Path, PathBuf};
use std::sync::Once;

use glshift::data::{check_features, parse_csv, parse_mat, parse_npy_labels, parse_npy_matrix};
use ndarray::Array2;

const TARGETS: [&str; 3] = ["npy_reader", "mat_reader", "csv_reader"];

#[path = "support/capped_alloc.rs"]
mod capped_alloc;

/// Files of `tests/<kind>/<target>/`, sorted; none when the folder does not exist.
fn files(kind: &str, target: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests").join(kind).join(target);
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut out: Vec<PathBuf> =
        entries.map(|e| e.unwrap().path()).filter(|p| p.is_file()).collect();
    out.sort();
    out
}

thread_local! {
    /// Set by the panic hook on the thread that panicked.
    static PANICKED: Cell<bool> = const { Cell::new(false) };
}

/// Runs `f` and tells whether anything panicked on this thread meanwhile, caught or not.
fn panicked_during<T>(f: impl FnOnce() -> T) -> (T, bool) {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            PANICKED.with(|p| p.set(true));
            previous(info);
        }));
    });
    PANICKED.with(|p| p.set(false));
    let out = f();
    (out, PANICKED.with(Cell::get))
}

/// What the fuzz target checks of one parse: a matrix in standard layout whose labels and
/// column names (when the format promises them) match its shape; errors name the file.
/// Returns the matrix when the input parsed.
fn parse_like_the_fuzzer(target: &str, path: &Path) -> Result<Array2<f32>, String> {
    let bytes = std::fs::read(path).unwrap();
    let name = path.display().to_string();
    let named = |e: glshift::Error| {
        let msg = e.to_string();
        assert!(msg.contains(&name), "error does not name the file: {msg}");
        msg
    };
    let no_panic = |panicked: bool| assert!(!panicked, "{name}: the parser panicked");
    let x = match target {
        "npy_reader" => {
            // The fuzz target feeds every input to both npy readers.
            let (labels, panicked) = panicked_during(|| parse_npy_labels(&bytes, path));
            no_panic(panicked);
            let _ = labels.map_err(named);
            let (x, panicked) = panicked_during(|| parse_npy_matrix(&bytes, path));
            no_panic(panicked);
            x.map_err(named)?
        }
        "mat_reader" => {
            let (p, panicked) = panicked_during(|| parse_mat(&bytes, path));
            no_panic(panicked);
            p.map_err(named)?.features
        }
        "csv_reader" => {
            let (p, panicked) = panicked_during(|| parse_csv(&bytes[..], path));
            no_panic(panicked);
            let p = p.map_err(named)?;
            let names = p.feature_names.as_ref().expect("CSV has column names");
            assert_eq!(names.len(), p.features.ncols(), "{name}");
            if let Some(labels) = &p.labels {
                assert_eq!(labels.len(), p.features.nrows(), "{name}");
            }
            p.features
        }
        _ => unreachable!("unknown target {target}"),
    };
    assert!(x.is_standard_layout(), "{name}");
    Ok(x)
}

#[test]
fn fuzz_crashers_give_an_error_naming_the_file_or_parse_consistently() {
    let mut seen = 0;
    for target in TARGETS {
        for path in files("fuzz_regressions", target) {
            // Error or consistent Ok are both fine; a panic (even caught), an abort or a
            // runaway allocation fails the test.
            let _ = parse_like_the_fuzzer(target, &path);
            seen += 1;
        }
    }
    assert!(seen > 0, "no files under tests/fuzz_regressions/");
}

#[test]
fn hand_made_fuzz_seeds_parse_to_non_empty_finite_matrices() {
    for target in TARGETS {
        let seeds = files("fuzz_seeds", target);
        assert!(seeds.len() >= 4, "{target}: expected its seed files");
        for path in seeds {
            let name = path.display().to_string();
            if target == "npy_reader" && name.contains("labels") {
                // Label files are 1-D or a column: the labels reader must take them.
                let labels = parse_npy_labels(&std::fs::read(&path).unwrap(), &path).unwrap();
                assert!(!labels.is_empty(), "{name}");
                continue;
            }
            let x = parse_like_the_fuzzer(target, &path)
                .unwrap_or_else(|e| panic!("seed should parse: {e}"));
            check_features(&name, x.view()).unwrap();
        }
    }
}

/// The model reader's seeds (`fuzz_seeds/model_reader/`, small models written by `glshift fit`)
/// load and predict; its crash inputs, if any, load or fail naming the file, without a panic.
#[test]
fn model_reader_seeds_load_and_crashers_fail_cleanly() {
    use glshift::model::FittedModel;
    let seeds = files("fuzz_seeds", "model_reader");
    assert!(seeds.len() >= 2, "expected the model seed files");
    for path in seeds {
        let (model, panicked) = panicked_during(|| FittedModel::load(&path));
        assert!(!panicked, "{}: the reader panicked", path.display());
        let model = model.unwrap_or_else(|e| panic!("seed should load: {e}"));
        let x = Array2::<f32>::zeros((2, model.input_dim()));
        let p = model.predict_proba(x.view()).unwrap();
        assert_eq!(p.dim(), (2, model.n_classes()));
    }
    for path in files("fuzz_regressions", "model_reader") {
        let name = path.display().to_string();
        let bytes = std::fs::read(&path).unwrap();
        for verify in [true, false] {
            let parse = || {
                if verify {
                    FittedModel::from_bytes(&bytes, &path)
                } else {
                    FittedModel::from_bytes_unverified(&bytes, &path)
                }
            };
            let (parsed, panicked) = panicked_during(parse);
            assert!(!panicked, "{name}: the reader panicked");
            if let Err(e) = parsed {
                assert!(e.to_string().contains(&name), "error does not name the file: {e}");
            }
        }
    }
}
