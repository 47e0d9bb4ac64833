//! The registry of methods: one row per method gives its [`MethodKind`] variant, its
//! command-line / report name (clap, serde, `Display`, `FromStr`, error lists, the Python
//! package's `METHODS` and [`MethodKind::ALL`] all read it), the facts the training loop asks
//! about it ([`MethodInfo`]: family, mini-batch stage, source class weights, citation) and how
//! to build its [`Method`]. Adding a method is one row here plus its own file; nothing else
//! lists methods or asks "is it method X".

use serde::{Deserialize, Serialize};

use super::baselines::{cdan, dann, mmd};
use super::method::{BuildContext, Method, SourceOnly};
use super::method_info::{info, ClassWeights, Family, MethodInfo};
use super::mul::config::Discrepancy;
use super::mul::Mul;
use crate::{Error, Result};

type Constructor = fn(&BuildContext) -> Result<Box<dyn Method>>;

macro_rules! registry {
    ($($(#[$doc:meta])* $variant:ident = $name:literal, $info:expr => $build:expr;)+) => {
        /// The adaptation method: the loss it adds to the one training loop.
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
        pub enum MethodKind {
            $($(#[$doc])* #[serde(rename = $name)] $variant,)+
        }

        impl MethodKind {
            /// Every method, in registry order (the two of the README's tables first).
            pub const ALL: [MethodKind; [$($name),+].len()] = [$(MethodKind::$variant),+];

            /// The command-line and report name.
            pub fn name(self) -> &'static str {
                match self {
                    $(MethodKind::$variant => $name,)+
                }
            }

            /// The registry row's facts about the method.
            pub fn info(self) -> MethodInfo {
                match self {
                    $(MethodKind::$variant => $info,)+
                }
            }

            fn constructor(self) -> Constructor {
                match self {
                    $(MethodKind::$variant => $build,)+
                }
            }
        }
    };
}

use ClassWeights::{Importance, KernelMeanMatching, Pada as PadaGamma};
use Family::{Baseline, Mul as MulFamily, Source as NoAdaptation};

registry! {
    /// No adaptation: cross-entropy on the source, same network and schedule.
    Source = "source", info(NoAdaptation, false, ClassWeights::None, "no adaptation")
        => |_| Ok(Box::new(SourceOnly));
    /// Minimum Uncertainty Learning: w-weighted CE + λ_TU·J_TU − λ_DU·J_DU (`methods::mul`).
    #[default]
    Mul = "mul", info(MulFamily, false, ClassWeights::None, "the paper (MUL, MCMD)")
        => |b| Ok(Box::new(Mul::new(b.mul, b.c, b.mul.discrepancy)));
    Dan = "dan", info(Baseline, true, ClassWeights::None, "Long et al. 2015 (ICML)")
        => |b| Ok(Box::new(mmd::Dan::new(b.baselines)));
    Dann = "dann", info(Baseline, true, ClassWeights::None, "Ganin et al. 2016 (JMLR)")
        => |b| Ok(Box::new(dann::Dann::<f32>::new(b)?));
    Cdan = "cdan", info(Baseline, true, ClassWeights::None, "Long et al. 2018 (NeurIPS)")
        => |b| Ok(Box::new(cdan::Cdan::<f32>::new(b, false)?));
    CdanE = "cdan-e", info(Baseline, true, ClassWeights::None, "Long et al. 2018 (NeurIPS), entropy conditioning")
        => |b| Ok(Box::new(cdan::Cdan::<f32>::new(b, true)?));
    Jan = "jan", info(Baseline, true, ClassWeights::None, "Long et al. 2017 (ICML)")
        => |b| Ok(Box::new(mmd::Jan::new(b.baselines)));
    IwDann = "iw-dann", info(Baseline, true, Importance, "Combes et al. 2020 (NeurIPS)")
        => |b| Ok(Box::new(dann::Dann::<f32>::new(b)?));
    IwCdan = "iw-cdan", info(Baseline, true, Importance, "Combes et al. 2020 (NeurIPS)")
        => |b| Ok(Box::new(cdan::Cdan::<f32>::new(b, false)?));
    Pada = "pada", info(Baseline, true, PadaGamma, "Cao et al. 2018 (ECCV)")
        => |b| Ok(Box::new(dann::Dann::<f32>::new(b)?));
    /// MUL with class-wise MMD in place of MCMD (the paper's ablation).
    MmdClasswise = "mmd-classwise", info(MulFamily, false, ClassWeights::None, "the paper's ablation (class-wise MMD)")
        => |b| Ok(Box::new(Mul::new(b.mul, b.c, Discrepancy::ClasswiseMmd)));
    /// Deep CORAL (Sun & Saenko 2016): λ·‖C_S − C_T‖²_F/(4d²) on Z (`baselines::coral`).
    Coral = "coral", info(Baseline, false, ClassWeights::None, "Sun & Saenko 2016 (ECCV workshops)")
        => |b| Ok(Box::new(super::baselines::coral::Coral::new(b.baselines)));
    /// MCC (Jin et al. 2020): λ·L_MCC, the target predictions' class confusion (`baselines::mcc`).
    Mcc = "mcc", info(Baseline, true, ClassWeights::None, "Jin et al. 2020 (ECCV)")
        => |b| Ok(Box::new(super::baselines::mcc::Mcc::new(b.baselines)));
    /// KMM (Huang et al. 2007): source rows re-weighted by kernel mean matching on the input
    /// features, then the β-weighted source CE (`baselines::kmm`).
    Kmm = "kmm", info(Baseline, false, KernelMeanMatching, "Huang et al. 2007 (NIPS)")
        => |b| Ok(Box::new(super::baselines::kmm::Kmm::new(&b.baselines.kmm)));
}

impl MethodKind {
    /// MUL and its class-wise-MMD variant (J_TU/J_DU, recorded in the history's `j_tu`/`j_du`).
    pub fn is_mul_family(self) -> bool {
        self.info().family == Family::Mul
    }

    /// A baseline of `methods::baselines`: a transfer term recorded in the history's `transfer`.
    pub fn is_baseline(self) -> bool {
        self.info().family == Family::Baseline
    }

    /// This method's [`Method`], built from `b` by its registry row.
    pub fn build(self, b: &BuildContext) -> Result<Box<dyn Method>> {
        (self.constructor())(b)
    }
}

impl From<MethodKind> for MethodInfo {
    fn from(kind: MethodKind) -> MethodInfo {
        kind.info()
    }
}

impl std::str::FromStr for MethodKind {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        MethodKind::ALL.iter().copied().find(|m| m.name() == s).ok_or_else(|| {
            let known: Vec<&str> = MethodKind::ALL.iter().map(|m| m.name()).collect();
            Error::param("method", s, format!("unknown method; known: {}", known.join(", ")))
        })
    }
}

impl std::fmt::Display for MethodKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{build_method, FitConfig};

    #[test]
    fn every_method_name_round_trips_through_parse_display_and_serde() {
        for m in MethodKind::ALL {
            assert_eq!(m.name().parse::<MethodKind>().unwrap(), m);
            assert_eq!(m.to_string(), m.name());
            assert_eq!(serde_json::to_string(&m).unwrap(), format!("\"{}\"", m.name()));
            assert_eq!(
                serde_json::from_str::<MethodKind>(&format!("\"{}\"", m.name())).unwrap(),
                m
            );
        }
        let names: std::collections::BTreeSet<&str> =
            MethodKind::ALL.iter().map(|m| m.name()).collect();
        assert_eq!(names.len(), MethodKind::ALL.len(), "two methods share a name");
        let err = "cdan+e".parse::<MethodKind>().unwrap_err().to_string();
        assert!(
            err.contains("cdan+e") && err.contains("iw-cdan") && err.contains("mmd-classwise"),
            "{err}"
        );
    }

    #[test]
    fn every_method_builds_and_only_mul_variants_and_iw_baselines_use_bbse() {
        for m in MethodKind::ALL {
            let cfg = FitConfig { method: m, ..Default::default() };
            let method = build_method(&cfg, 8, 3).unwrap();
            let want = matches!(
                m,
                MethodKind::Mul
                    | MethodKind::MmdClasswise
                    | MethodKind::IwDann
                    | MethodKind::IwCdan
            );
            assert_eq!(method.needs_shift_estimate(), want, "{m}");
            assert_eq!(method.sees_target(), m != MethodKind::Source, "{m}");
        }
        let mut cfg = FitConfig::default();
        cfg.mul.importance_weighting = false;
        cfg.mul.prior_weighting = false;
        assert!(
            !build_method(&cfg, 8, 3).unwrap().needs_shift_estimate(),
            "J_TU with pˢ and no w needs no estimate"
        );
    }

    #[test]
    fn registry_rows_are_consistent() {
        for m in MethodKind::ALL {
            let i = m.info();
            assert!(!i.citation.is_empty(), "{m}");
            if i.family != Family::Baseline {
                // Only the papers' baselines have a mini-batch stage or source class weights.
                assert!(!i.paper_minibatch && i.class_weights == ClassWeights::None, "{m}");
            }
        }
        assert_eq!(MethodKind::ALL.iter().filter(|m| m.is_mul_family()).count(), 2);
        assert_eq!(MethodKind::Source.info().family, Family::Source);
    }
}
