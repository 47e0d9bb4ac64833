//! Any bytes given to the image path of `glshift extract`: decode (JPEG or PNG, with the size
//! bounds of `preprocess`), then resize + centre crop + normalise. `Ok` with a finite
//! `(3, 260, 260)` input or an error, never a panic or an allocation above the run's limit.
#![no_main]

use glshift_extract::preprocess::{decode_bytes, to_input};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(img) = decode_bytes(data) {
        if let Ok(x) = to_input(&img) {
            assert_eq!(x.len(), 3 * 260 * 260);
            assert!(x.iter().all(|v| v.is_finite()));
        }
    }
});
