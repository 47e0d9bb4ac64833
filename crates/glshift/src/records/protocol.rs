//! How a task was built from a source/target pair (the record; building it is
//! `glshift_experiments::protocol::apply`).
//!
//! - `uda`: both domains unchanged.
//! - `pda`: the target keeps only the first k classes (order of `classes.txt`); the source keeps
//!   all classes.
//! - `gls`: the subsampling protocol of Combes et al. (NeurIPS 2020) as the MUL paper uses it: the
//!   source keeps int(0.3·n_c) rows, drawn without replacement with a fixed seed, of each class in
//!   the first half of the classes, and all rows of the others; the target is untouched.
//! - `msda`: multi-source, leave one domain out: each target with every other domain of the
//!   folder pooled as its source (`data::load_sources`), all unchanged (`glshift bench` only).

use serde::{Deserialize, Serialize};

use crate::{Error, Result};

/// A protocol with its parameters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(tag = "setting", rename_all = "kebab-case")]
pub enum Protocol {
    #[default]
    Uda,
    /// Target keeps classes 0..k.
    Pda { classes: usize },
    /// Source keeps `fraction` of each class in the first half (seeded).
    Gls { fraction: f64, seed: u64 },
    /// Every other domain pooled as the source; rows unchanged.
    Msda,
}

impl Protocol {
    /// Parses `uda`, `pda`, `gls` or `msda` with the paper's defaults: k = c/2 for PDA (5 of 10 classes),
    /// fraction 0.3 and seed 42 (Combes et al.'s default) for GLS.
    pub fn parse(setting: &str, n_classes: usize, pda_classes: Option<usize>) -> Result<Protocol> {
        match setting {
            "uda" => Ok(Protocol::Uda),
            "pda" => Ok(Protocol::Pda { classes: pda_classes.unwrap_or(n_classes / 2) }),
            "gls" => Ok(Protocol::Gls { fraction: 0.3, seed: 42 }),
            "msda" => Ok(Protocol::Msda),
            other => {
                Err(Error::param("setting", other, "unknown setting; known: uda, pda, gls, msda"))
            }
        }
    }

    pub fn name(&self) -> &'static str {
        match self {
            Protocol::Uda => "uda",
            Protocol::Pda { .. } => "pda",
            Protocol::Gls { .. } => "gls",
            Protocol::Msda => "msda",
        }
    }

    /// "uda", "pda (5 target classes)", "gls": the setting as a report shows it.
    pub fn label(&self) -> String {
        match self {
            Protocol::Pda { classes } => format!("pda ({classes} target classes)"),
            Protocol::Msda => "msda (every other domain pooled as the source)".to_string(),
            other => other.name().to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_setting_is_an_error_and_the_json_shape_is_tagged() {
        assert!(Protocol::parse("semi", 10, None).is_err());
        assert_eq!(Protocol::parse("pda", 10, None).unwrap(), Protocol::Pda { classes: 5 });
        let json = serde_json::to_string(&Protocol::Pda { classes: 5 }).unwrap();
        assert_eq!(json, r#"{"setting":"pda","classes":5}"#);
        assert_eq!(
            serde_json::from_str::<Protocol>(&json).unwrap().label(),
            "pda (5 target classes)"
        );
        assert_eq!(
            serde_json::from_str::<Protocol>(r#"{"setting":"uda"}"#).unwrap(),
            Protocol::Uda
        );
    }
}
