//! The table of methods in docs/methods.md, generated from the core's registry (`MethodKind::ALL`
//! and each row's `MethodInfo`), so that a method added by its registry row appears there
//! without a hand edit. `tests/methods_table.rs` holds the docs to it (`GLSHIFT_BLESS=1`
//! rewrites the section).

use glshift::methods::{BaselineConfig, BaselineSchedule, ClassWeights, Family, MethodKind};

/// The marker lines around the generated section of docs/methods.md.
pub const BEGIN: &str = "<!-- methods table: generated from the registry (crates/glshift-experiments/src/methods_table.rs) -->";
pub const END: &str = "<!-- end of the methods table -->";

/// One markdown table, a row per registered method in registry order: name, family, how it
/// adapts under the default `baselines.schedule`, the weights on the source cross-entropy, and
/// the paper.
pub fn markdown() -> String {
    let mut out = String::from("| `--method` | family | adaptation stage (defaults) | source CE weights | paper |\n|---|---|---|---|---|\n");
    let paper_training = BaselineConfig::default().schedule == BaselineSchedule::Paper;
    for m in MethodKind::ALL {
        let info = m.info();
        let family = match info.family {
            Family::Source => "no adaptation",
            Family::Mul => "MUL",
            Family::Baseline => "baseline",
        };
        let stage = match info.family {
            Family::Baseline if info.paper_minibatch && paper_training => {
                "mini-batch SGD, annealed (as its paper)"
            }
            Family::Baseline => "full-batch AdamW",
            Family::Source | Family::Mul => {
                "full-batch AdamW; mini-batch with a memory bank past 20 M rows × dims"
            }
        };
        let weights = match info.class_weights {
            // MUL weighs its cross-entropy itself (`Method::step`), not through the row.
            ClassWeights::None if info.family == Family::Mul => {
                "BBSE-QP's w (`mul.importance_weighting`)"
            }
            ClassWeights::None => "none",
            ClassWeights::Importance => "BBSE-QP's w",
            ClassWeights::Pada => "PADA's γ",
            ClassWeights::KernelMeanMatching => "KMM's β, one per source row",
        };
        out.push_str(&format!(
            "| `{}` | {family} | {stage} | {weights} | {} |\n",
            m.name(),
            info.citation
        ));
    }
    out
}
