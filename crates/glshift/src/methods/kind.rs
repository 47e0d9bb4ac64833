//! What each [`MethodKind`] needs from the training loop: its name, whether it is a MUL
//! variant, whether it uses the per-iteration BBSE-QP estimate, whether it sees the target.

use super::config::{Discrepancy, FitConfig, MethodKind};

impl MethodKind {
    /// Every method: the two of the README's tables first, then the baselines.
    pub const ALL: [MethodKind; 11] = [
        MethodKind::Source,
        MethodKind::Mul,
        MethodKind::Dan,
        MethodKind::Dann,
        MethodKind::Cdan,
        MethodKind::CdanE,
        MethodKind::Jan,
        MethodKind::IwDann,
        MethodKind::IwCdan,
        MethodKind::Pada,
        MethodKind::MmdClasswise,
    ];

    /// The command-line and report name (kebab-case, as serde writes it).
    pub fn name(self) -> &'static str {
        match self {
            MethodKind::Source => "source",
            MethodKind::Mul => "mul",
            MethodKind::Dan => "dan",
            MethodKind::Dann => "dann",
            MethodKind::Cdan => "cdan",
            MethodKind::CdanE => "cdan-e",
            MethodKind::Jan => "jan",
            MethodKind::IwDann => "iw-dann",
            MethodKind::IwCdan => "iw-cdan",
            MethodKind::Pada => "pada",
            MethodKind::MmdClasswise => "mmd-classwise",
        }
    }

    /// MUL and its class-wise-MMD variant: the loop's J_TU/J_DU path.
    pub fn is_mul_family(self) -> bool {
        matches!(self, MethodKind::Mul | MethodKind::MmdClasswise)
    }

    /// A baseline of `methods::baselines` (a loss computed outside the MUL path).
    pub fn is_baseline(self) -> bool {
        !self.is_mul_family() && self != MethodKind::Source
    }

    /// The importance-weighted baselines of Combes et al. (2020), which read BBSE-QP's w.
    pub fn is_importance_weighted_baseline(self) -> bool {
        matches!(self, MethodKind::IwDann | MethodKind::IwCdan)
    }

    /// Whether the adaptation stage trains on the target rows too (everything but `source`).
    pub fn adapts(self) -> bool {
        self != MethodKind::Source
    }
}

impl FitConfig {
    /// The discrepancy MUL's terms use: `mmd-classwise` forces class-wise MMD.
    pub fn effective_discrepancy(&self) -> Discrepancy {
        if self.method == MethodKind::MmdClasswise {
            Discrepancy::ClasswiseMmd
        } else {
            self.mul.discrepancy
        }
    }

    /// Whether the loop needs BBSE-QP each adaptation iteration: MUL for w or for p̂ᵗ in J_TU,
    /// and the importance-weighted baselines.
    pub fn needs_shift_estimate(&self) -> bool {
        let m = &self.mul;
        (self.method.is_mul_family() && (m.importance_weighting || (m.use_tu && m.prior_weighting)))
            || self.method.is_importance_weighted_baseline()
    }

    /// Whether probabilities are temperature-calibrated on the hold-out (for BBSE and τ).
    pub fn calibrates(&self) -> bool {
        self.label_shift.calibrate && (self.method.is_mul_family() || self.method.is_importance_weighted_baseline())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_method_name_round_trips_through_parse_display_and_serde() {
        for m in MethodKind::ALL {
            assert_eq!(m.name().parse::<MethodKind>().unwrap(), m);
            assert_eq!(m.to_string(), m.name());
            assert_eq!(serde_json::to_string(&m).unwrap(), format!("\"{}\"", m.name()));
        }
        let err = "cdan+e".parse::<MethodKind>().unwrap_err().to_string();
        assert!(err.contains("cdan+e") && err.contains("iw-cdan") && err.contains("mmd-classwise"), "{err}");
    }

    #[test]
    fn only_mul_variants_and_iw_baselines_use_bbse() {
        for m in MethodKind::ALL {
            let cfg = FitConfig { method: m, ..Default::default() };
            let want = matches!(m, MethodKind::Mul | MethodKind::MmdClasswise | MethodKind::IwDann | MethodKind::IwCdan);
            assert_eq!(cfg.needs_shift_estimate(), want, "{m}");
        }
        let mut cfg = FitConfig::default();
        cfg.mul.importance_weighting = false;
        cfg.mul.prior_weighting = false;
        assert!(!cfg.needs_shift_estimate(), "J_TU with pˢ and no w needs no estimate");
    }
}
