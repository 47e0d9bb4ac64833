//! Any bytes given to the CSV reader: `Ok` with one label per row and one name per feature
//! column, or a `glshift::Error` naming the file, never a panic.
#![no_main]

use std::path::Path;

use glshift::data::{check_features, parse_csv};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    match parse_csv(data, Path::new("fuzz.csv")) {
        Ok(p) => {
            let x = &p.features;
            assert!(x.is_standard_layout());
            let names = p.feature_names.as_ref().expect("CSV always has column names");
            assert_eq!(names.len(), x.ncols());
            if let Some(labels) = &p.labels {
                assert_eq!(labels.len(), x.nrows());
            }
            if check_features("fuzz.csv", x.view()).is_ok() {
                assert!(x.iter().all(|v| v.is_finite()));
            }
        }
        Err(e) => assert!(e.to_string().contains("fuzz.csv"), "{e}"),
    }
});
