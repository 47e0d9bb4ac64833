//! Files kept from fuzzing the readers (see README, "Fuzzing"), run through the same parsing
//! functions as the fuzz targets in `fuzz/fuzz_targets/`:
//! - `tests/fuzz_regressions/<target>/`: minimised inputs that once crashed, hung or blew
//!   up memory; each must now give an error naming the file (or parse consistently);
//! - `tests/fuzz_seeds/<target>/`: the hand-made valid seed files (`fuzz/make_seeds.py`);
//!   each must parse to a non-empty, finite matrix (`.npy` label files: to labels).
//!
//! Like libFuzzer's `-malloc_limit_mb`, this test binary refuses any single allocation above
//! [`MAX_ALLOCATION`]: an input that makes a reader ask for one aborts the test.

use std::alloc::{GlobalAlloc, Layout, System};
use std::path::{Path, PathBuf};

use glshift::data::{check_features, parse_csv, parse_mat, parse_npy_labels, parse_npy_matrix};
use ndarray::Array2;

const TARGETS: [&str; 3] = ["npy_reader", "mat_reader", "csv_reader"];

/// Far above what any file here needs, far below what a corrupt size field asks for.
const MAX_ALLOCATION: usize = 256 << 20;

/// The system allocator, failing (null: Rust then aborts) any request above [`MAX_ALLOCATION`].
struct CappedAllocator;

// SAFETY: forwards to `System` unchanged, or returns null, which `GlobalAlloc` allows.
unsafe impl GlobalAlloc for CappedAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if layout.size() > MAX_ALLOCATION {
            return std::ptr::null_mut();
        }
        System.alloc(layout)
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if layout.size() > MAX_ALLOCATION {
            return std::ptr::null_mut();
        }
        System.alloc_zeroed(layout)
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if new_size > MAX_ALLOCATION {
            return std::ptr::null_mut();
        }
        System.realloc(ptr, layout, new_size)
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout)
    }
}

#[global_allocator]
static ALLOCATOR: CappedAllocator = CappedAllocator;

/// Files of `tests/<kind>/<target>/`, sorted; none when the folder does not exist.
fn files(kind: &str, target: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join(kind)
        .join(target);
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut out: Vec<PathBuf> = entries
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .collect();
    out.sort();
    out
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
    let x = match target {
        "npy_reader" => {
            // The fuzz target feeds every input to both npy readers.
            let _ = parse_npy_labels(&bytes, path).map_err(named);
            parse_npy_matrix(&bytes, path).map_err(named)?
        }
        "mat_reader" => parse_mat(&bytes, path).map_err(named)?.features,
        "csv_reader" => {
            let p = parse_csv(&bytes[..], path).map_err(named)?;
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
            // Either outcome is fine; a panic, abort or runaway allocation fails the test.
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
