//! The generated sections of the docs equal what the code generates: docs/methods.md's table
//! of methods is the registry's (`methods_table::markdown`), docs/configuration.md's defaults
//! are `FitConfig::default()` (`config_reference::markdown`). `GLSHIFT_BLESS=1 cargo test -p
//! glshift-experiments --test generated_docs` rewrites the sections between the markers.

use glshift_experiments::{config_reference, methods_table};

/// Checks (or, with `GLSHIFT_BLESS`, rewrites) the section of `page` between `begin` and `end`;
/// returns the section as it stands in the page.
fn check_section(page: &str, begin: &str, end: &str, want: &str) -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").join(page);
    let doc = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{page}: {e}"));
    let (Some(b), Some(e)) = (doc.find(begin), doc.find(end)) else {
        panic!("{page} lacks the markers {begin:?} … {end:?}");
    };
    let start = b + begin.len() + 1;
    if std::env::var_os("GLSHIFT_BLESS").is_some() {
        let new = format!("{}{want}{}", &doc[..start], &doc[e..]);
        std::fs::write(&path, new).unwrap_or_else(|e| panic!("{page}: {e}"));
        return want.to_owned();
    }
    assert_eq!(
        &doc[start..e],
        want,
        "{page}'s generated section differs: rerun with GLSHIFT_BLESS=1"
    );
    doc[start..e].to_owned()
}

#[test]
fn docs_methods_table_is_the_registrys() {
    let want = methods_table::markdown();
    let got = check_section("docs/methods.md", methods_table::BEGIN, methods_table::END, &want);
    for m in glshift::methods::MethodKind::ALL {
        assert!(got.contains(&format!("| `{}` |", m.name())), "{m} missing");
    }
}

#[test]
fn docs_configuration_is_the_defaults() {
    let want = config_reference::markdown();
    let got = check_section(
        "docs/configuration.md",
        config_reference::BEGIN,
        config_reference::END,
        &want,
    );
    assert!(got.contains("adapt_iters = "), "the reference lacks a top-level key");
}
