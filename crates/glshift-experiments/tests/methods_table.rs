//! docs/methods.md's table of methods is the registry's (`methods_table::markdown`): a method
//! added by its registry row must appear there. `GLSHIFT_BLESS=1 cargo test -p
//! glshift-experiments --test methods_table` rewrites the section between the markers.

use glshift_experiments::methods_table::{markdown, BEGIN, END};

#[test]
fn docs_methods_table_is_the_registrys() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/methods.md");
    let doc = std::fs::read_to_string(&path).expect("docs/methods.md is readable");
    let (Some(b), Some(e)) = (doc.find(BEGIN), doc.find(END)) else {
        panic!("docs/methods.md lacks the markers {BEGIN:?} … {END:?}");
    };
    let start = b + BEGIN.len() + 1;
    let want = markdown();
    if std::env::var_os("GLSHIFT_BLESS").is_some() {
        let new = format!("{}{want}{}", &doc[..start], &doc[e..]);
        std::fs::write(&path, new).expect("docs/methods.md is writable");
        return;
    }
    assert_eq!(
        &doc[start..e],
        want,
        "docs/methods.md's table differs from the registry: rerun with GLSHIFT_BLESS=1"
    );
    for m in glshift::methods::MethodKind::ALL {
        assert!(doc[start..e].contains(&format!("| `{}` |", m.name())), "{m} missing");
    }
}
