//! Any bytes given to the MATLAB v5 `.mat` reader: `Ok` with a consistent matrix, or a
//! `glshift::Error` naming the file, never a panic or a huge allocation.
#![no_main]

use std::path::Path;

use glshift::data::{check_features, parse_mat};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    match parse_mat(data, Path::new("fuzz.mat")) {
        Ok(p) => {
            let x = &p.features;
            assert!(x.is_standard_layout());
            assert_eq!(x.len(), x.nrows() * x.ncols());
            assert!(p.feature_names.is_none());
            if check_features("fuzz.mat", x.view()).is_ok() {
                assert!(x.iter().all(|v| v.is_finite()));
            }
        }
        Err(e) => assert!(e.to_string().contains("fuzz.mat"), "{e}"),
    }
});
