//! Any bytes given to the `.npy` reader (as features and as labels): `Ok` or a
//! `glshift::Error` naming the file, never a panic or a huge allocation.
#![no_main]

use std::path::Path;

use glshift::data::{check_features, parse_npy_labels, parse_npy_matrix};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let path = Path::new("fuzz.npy");
    match parse_npy_matrix(data, path) {
        Ok(x) => {
            assert!(x.is_standard_layout());
            assert_eq!(x.len(), x.nrows() * x.ncols());
            // The loader's promise: what passes the check is non-empty and finite.
            if check_features("fuzz.npy", x.view()).is_ok() {
                assert!(x.nrows() > 0 && x.ncols() > 0);
                assert!(x.iter().all(|v| v.is_finite()));
            }
        }
        Err(e) => assert!(e.to_string().contains("fuzz.npy"), "{e}"),
    }
    if let Err(e) = parse_npy_labels(data, path) {
        assert!(e.to_string().contains("fuzz.npy"), "{e}");
    }
});
