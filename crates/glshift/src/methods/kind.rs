//! The registry of methods: one line per method gives its [`MethodKind`] variant, its
//! command-line / report name (clap, serde, `Display`, `FromStr`, error lists and
//! [`MethodKind::ALL`] all read it) and how to build its [`Method`]. Adding a method is one
//! line here plus its own file; nothing else lists methods.

use serde::{Deserialize, Serialize};

use super::baselines::{cdan, dann, mmd};
use super::config::{Discrepancy, FitConfig};
use super::method::{Method, SourceOnly};
use super::mul::Mul;
use crate::{Error, Result};

/// What a method's constructor gets: the settings, the width of Z and the number of classes.
pub struct BuildContext<'a> {
    pub cfg: &'a FitConfig,
    pub z_dim: usize,
    pub c: usize,
}

type Constructor = fn(&BuildContext) -> Result<Box<dyn Method>>;

macro_rules! registry {
    ($($(#[$doc:meta])* $variant:ident = $name:literal => $build:expr;)+) => {
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

            fn constructor(self) -> Constructor {
                match self {
                    $(MethodKind::$variant => $build,)+
                }
            }
        }
    };
}

registry! {
    /// No adaptation: cross-entropy on the source, same network and schedule.
    Source = "source" => |_| Ok(Box::new(SourceOnly));
    /// Minimum Uncertainty Learning: w-weighted CE + λ_TU·J_TU − λ_DU·J_DU (`methods::mul`).
    #[default]
    Mul = "mul" => |b| Ok(Box::new(Mul::new(b.cfg, b.c, b.cfg.mul.discrepancy)));
    Dan = "dan" => |b| Ok(Box::new(mmd::Dan::new(&b.cfg.baselines)));
    Dann = "dann" => |b| Ok(Box::new(dann::Dann::<f32>::new(MethodKind::Dann, b.z_dim, b.cfg)?));
    Cdan = "cdan" => |b| Ok(Box::new(cdan::Cdan::<f32>::new(MethodKind::Cdan, b.z_dim, b.c, b.cfg)?));
    CdanE = "cdan-e" => |b| Ok(Box::new(cdan::Cdan::<f32>::new(MethodKind::CdanE, b.z_dim, b.c, b.cfg)?));
    Jan = "jan" => |b| Ok(Box::new(mmd::Jan::new(&b.cfg.baselines)));
    IwDann = "iw-dann" => |b| Ok(Box::new(dann::Dann::<f32>::new(MethodKind::IwDann, b.z_dim, b.cfg)?));
    IwCdan = "iw-cdan" => |b| Ok(Box::new(cdan::Cdan::<f32>::new(MethodKind::IwCdan, b.z_dim, b.c, b.cfg)?));
    Pada = "pada" => |b| Ok(Box::new(dann::Dann::<f32>::new(MethodKind::Pada, b.z_dim, b.cfg)?));
    /// MUL with class-wise MMD in place of MCMD (the paper's ablation).
    MmdClasswise = "mmd-classwise" => |b| Ok(Box::new(Mul::new(b.cfg, b.c, Discrepancy::ClasswiseMmd)));
    #[doc = "Deep CORAL (Sun & Saenko 2016): λ·‖C_S − C_T‖²_F/(4d²) on Z (`baselines::coral`)."] Coral = "coral" => |b| Ok(Box::new(super::baselines::coral::Coral::new(&b.cfg.baselines)));
}

impl MethodKind {
    /// MUL and its class-wise-MMD variant (J_TU/J_DU, recorded in the history's `j_tu`/`j_du`).
    pub fn is_mul_family(self) -> bool {
        matches!(self, MethodKind::Mul | MethodKind::MmdClasswise)
    }

    /// A baseline of `methods::baselines`: a transfer term recorded in the history's `transfer`.
    pub fn is_baseline(self) -> bool {
        !self.is_mul_family() && self != MethodKind::Source
    }
}

/// The [`Method`] of `cfg.method` for a Z of `z_dim` columns and `c` classes.
pub fn build_method(cfg: &FitConfig, z_dim: usize, c: usize) -> Result<Box<dyn Method>> {
    (cfg.method.constructor())(&BuildContext { cfg, z_dim, c })
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

    #[test]
    fn every_method_name_round_trips_through_parse_display_and_serde() {
        for m in MethodKind::ALL {
            assert_eq!(m.name().parse::<MethodKind>().unwrap(), m);
            assert_eq!(m.to_string(), m.name());
            assert_eq!(serde_json::to_string(&m).unwrap(), format!("\"{}\"", m.name()));
            assert_eq!(serde_json::from_str::<MethodKind>(&format!("\"{}\"", m.name())).unwrap(), m);
        }
        let names: std::collections::BTreeSet<&str> = MethodKind::ALL.iter().map(|m| m.name()).collect();
        assert_eq!(names.len(), MethodKind::ALL.len(), "two methods share a name");
        let err = "cdan+e".parse::<MethodKind>().unwrap_err().to_string();
        assert!(err.contains("cdan+e") && err.contains("iw-cdan") && err.contains("mmd-classwise"), "{err}");
    }

    #[test]
    fn every_method_builds_and_only_mul_variants_and_iw_baselines_use_bbse() {
        for m in MethodKind::ALL {
            let cfg = FitConfig { method: m, ..Default::default() };
            let method = build_method(&cfg, 8, 3).unwrap();
            let want = matches!(m, MethodKind::Mul | MethodKind::MmdClasswise | MethodKind::IwDann | MethodKind::IwCdan);
            assert_eq!(method.needs_shift_estimate(), want, "{m}");
            assert_eq!(method.sees_target(), m != MethodKind::Source, "{m}");
        }
        let mut cfg = FitConfig::default();
        cfg.mul.importance_weighting = false;
        cfg.mul.prior_weighting = false;
        assert!(!build_method(&cfg, 8, 3).unwrap().needs_shift_estimate(), "J_TU with pˢ and no w needs no estimate");
    }
}
