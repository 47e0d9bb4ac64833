//! The configuration reference in docs/configuration.md, generated from
//! [`FitConfig::default`]: every key a `--config` TOML file may set, with its default value, so
//! that the page cannot drift from the code. `tests/generated_docs.rs` holds the page to it
//! (`GLSHIFT_BLESS=1` rewrites the section).

use glshift::config::FitConfig;

/// The marker lines around the generated section of docs/configuration.md.
pub const BEGIN: &str = "<!-- defaults: generated from FitConfig::default() (crates/glshift-experiments/src/config_reference.rs) -->";
pub const END: &str = "<!-- end of the defaults -->";

/// The default settings as one TOML document in a fenced block; a file holding any subset of
/// it (a key left out keeps its default) is what `--config` reads.
pub fn markdown() -> String {
    let text = toml::to_string_pretty(&FitConfig::default())
        .expect("the default settings serialise as TOML");
    format!("```toml\n{}```\n", text.trim_end().to_owned() + "\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The generated defaults read back as the defaults: the page is a valid `--config` file.
    #[test]
    fn the_reference_reads_back_as_the_defaults() {
        let md = markdown();
        let body = md.trim_start_matches("```toml\n").trim_end_matches("```\n");
        let back: FitConfig = toml::from_str(body).expect("the reference parses as a config");
        assert_eq!(back, FitConfig::default());
    }
}
