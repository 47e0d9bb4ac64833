//! Files kept for the extraction fuzz targets (`fuzz/fuzz_targets/pth_reader.rs`,
//! `image_path.rs`; docs/fuzzing.md), run through the same functions:
//! - `tests/fuzz_seeds/<target>/`: hand-made valid files (`fuzz/make_extract_seeds.py`); each
//!   must parse (weights: to float tensors of the stated shapes; images: to a finite network
//!   input);
//! - `tests/fuzz_regressions/<target>/`: hostile inputs (deep nesting, memo doubling, views
//!   beyond their storage, images of extreme size or aspect) and any fuzzing finding; each must
//!   be refused with an error, quickly and within the allocation cap.
//!
//! As under libFuzzer, any single allocation above [`capped_alloc::MAX_ALLOCATION`] aborts the test (like
//! `-malloc_limit_mb`), and a stack overflow aborts it too.

use std::path::{Path, PathBuf};

use glshift_extract::preprocess::{decode_bytes, to_input};
use glshift_extract::pth::parse_state_dict;

#[path = "../../glshift/tests/support/capped_alloc.rs"]
mod capped_alloc;

/// Files of `tests/<kind>/<target>/`, sorted; a test error when the folder is missing or empty
/// (these files are committed, so an empty list would make the test pass on nothing).
fn files(kind: &str, target: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests").join(kind).join(target);
    let mut out: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    out.sort();
    assert!(!out.is_empty(), "{} holds no file", dir.display());
    out
}

/// What the image target does with bytes: decode, then the network input (finite values).
fn image_input(bytes: &[u8]) -> Result<Vec<f32>, String> {
    let img = decode_bytes(bytes)?;
    let x = to_input(&img)?;
    assert!(x.iter().all(|v| v.is_finite()));
    Ok(x)
}

#[test]
fn weights_seeds_parse_to_their_tensors() {
    for f in files("fuzz_seeds", "pth_reader") {
        let dict = parse_state_dict(&std::fs::read(&f).unwrap())
            .unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        assert!(!dict.is_empty(), "{}", f.display());
        for (name, t) in &dict {
            assert_eq!(t.data.len(), t.shape.iter().product::<usize>(), "{}: {name}", f.display());
        }
    }
    let two =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fuzz_seeds/pth_reader/two_tensors.pth");
    let dict = parse_state_dict(&std::fs::read(two).unwrap()).unwrap();
    assert_eq!(dict.keys().collect::<Vec<_>>(), ["bn.running_mean", "conv.weight"]); // the int64 entry is left out
    assert_eq!(dict["conv.weight"].data, [0.0, 2.0, 4.0, 1.0, 3.0, 5.0]);
}

#[test]
fn hostile_weights_files_are_refused() {
    for f in files("fuzz_regressions", "pth_reader") {
        let e = parse_state_dict(&std::fs::read(&f).unwrap()).expect_err(&f.display().to_string());
        assert!(!e.is_empty(), "{}", f.display());
        eprintln!("{}: {e}", f.display());
    }
}

#[test]
fn image_seeds_decode_to_a_network_input() {
    for f in files("fuzz_seeds", "image_path") {
        let x = image_input(&std::fs::read(&f).unwrap())
            .unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        assert_eq!(x.len(), 3 * 260 * 260, "{}", f.display());
    }
}

#[test]
fn hostile_images_are_refused_before_decoding() {
    for f in files("fuzz_regressions", "image_path") {
        let e = image_input(&std::fs::read(&f).unwrap()).expect_err(&f.display().to_string());
        assert!(e.contains("pixels"), "{}: {e}", f.display());
    }
}
