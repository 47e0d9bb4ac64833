//! Where the tests find `<repo>/../shared` (real images, weights and reference features).
//! Also compiled into `glshift-cli`'s extract test (`#[path]`), so both look in one place.

use std::path::{Path, PathBuf};

/// `<repo>/../shared/<rel>` when it exists; otherwise prints the `SKIPPED` line the test
/// conventions ask for and gives `None`, so the caller returns without checking anything.
pub fn shared(rel: &str) -> Option<PathBuf> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared").join(rel);
    if p.exists() {
        Some(p)
    } else {
        eprintln!("SKIPPED: {} not found (test skipped)", p.display());
        None
    }
}
