//! The paper's ablation (section "Ablation Study", Table "Ablation"): each row is MUL with some
//! of its parts switched off, expressed as a [`FitConfig`] variant so that it runs through the
//! same loop with the same defaults as full MUL.

use super::FitConfig;
use crate::methods::Discrepancy;
use crate::methods::MethodKind;

/// One row of the ablation table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AblationRow {
    /// File-safe identifier (record names, `results.json`'s `method`).
    pub id: &'static str,
    /// The row's label in `table.md`, in the paper's notation.
    pub label: &'static str,
    /// "w,y": importance-weighted CE and target-prior-weighted J_TU.
    pub weights: bool,
    pub tu: bool,
    pub du: bool,
    pub discrepancy: Discrepancy,
}

/// The rows in the paper's order: J_TU only; w,y + J_TU; w,y + J_DU; J_TU + J_DU; full MUL;
/// full MUL with class-wise MMD in place of MCMD.
pub const ABLATION_ROWS: [AblationRow; 6] = [
    AblationRow {
        id: "tu",
        label: "J_TU",
        weights: false,
        tu: true,
        du: false,
        discrepancy: Discrepancy::Mcmd,
    },
    AblationRow {
        id: "wy-tu",
        label: "w,y + J_TU",
        weights: true,
        tu: true,
        du: false,
        discrepancy: Discrepancy::Mcmd,
    },
    AblationRow {
        id: "wy-du",
        label: "w,y + J_DU",
        weights: true,
        tu: false,
        du: true,
        discrepancy: Discrepancy::Mcmd,
    },
    AblationRow {
        id: "tu-du",
        label: "J_TU + J_DU",
        weights: false,
        tu: true,
        du: true,
        discrepancy: Discrepancy::Mcmd,
    },
    AblationRow {
        id: "mul",
        label: "w,y + J_TU + J_DU (MUL)",
        weights: true,
        tu: true,
        du: true,
        discrepancy: Discrepancy::Mcmd,
    },
    AblationRow {
        id: "mul-mmd",
        label: "MUL, class-wise MMD",
        weights: true,
        tu: true,
        du: true,
        discrepancy: Discrepancy::ClasswiseMmd,
    },
];

impl AblationRow {
    /// `base` (defaults, or the user's `--config`) with MUL's switches set for this row.
    pub fn config(&self, base: &FitConfig) -> FitConfig {
        let mut cfg = base.clone();
        cfg.method = MethodKind::Mul;
        cfg.mul.importance_weighting = self.weights;
        cfg.mul.prior_weighting = self.weights;
        cfg.mul.use_tu = self.tu;
        cfg.mul.use_du = self.du;
        cfg.mul.discrepancy = self.discrepancy;
        cfg
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn full_mul_row_is_the_default_configuration() {
        let base = FitConfig::default();
        let full = ABLATION_ROWS.iter().find(|r| r.id == "mul").unwrap();
        assert_eq!(full.config(&base), base);
        for r in ABLATION_ROWS {
            r.config(&base).validate().unwrap();
        }
        let ids: std::collections::BTreeSet<_> = ABLATION_ROWS.iter().map(|r| r.id).collect();
        assert_eq!(ids.len(), ABLATION_ROWS.len());
    }

    #[test]
    fn discrepancy_parses_from_toml() {
        let c: FitConfig =
            toml::from_str("[mul]\ndiscrepancy = \"classwise-mmd\"\nprior_weighting = false")
                .unwrap();
        assert_eq!((c.mul.discrepancy, c.mul.prior_weighting), (Discrepancy::ClasswiseMmd, false));
    }
}
