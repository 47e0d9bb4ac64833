//! The candidates of a selection: a method and overrides of MUL's λ_TU, λ_DU, τ and of
//! `adapt_iters`, applied over one base configuration (which also fixes the seed and
//! pre-training, so that every candidate shares one pre-trained network). Read from a TOML
//! file of `[[candidate]]` tables (docs/select.md), or the default set.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::config::FitConfig;
use crate::methods::MethodKind;
use crate::{Error, Result};

/// One candidate configuration: `method` with optional overrides over the base configuration.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Candidate {
    /// Name in `selection.json` and messages; default: built from the method and overrides.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    pub method: MethodKind,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lambda_tu: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lambda_du: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tau: Option<f64>,
    /// Adaptation iterations (a cap for MUL, whose label-free stop usually ends it earlier).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub adapt_iters: Option<usize>,
}

impl Candidate {
    /// `method` with no override.
    pub fn new(method: MethodKind) -> Candidate {
        Candidate {
            name: None,
            method,
            lambda_tu: None,
            lambda_du: None,
            tau: None,
            adapt_iters: None,
        }
    }

    pub fn named(mut self, name: &str) -> Candidate {
        self.name = Some(name.to_string());
        self
    }

    /// The name given, or e.g. `mul[lambda_du=0]` from the method and the overrides.
    pub fn label(&self) -> String {
        if let Some(n) = &self.name {
            return n.clone();
        }
        let mut parts = Vec::new();
        let f = |k: &str, v: Option<f64>| v.map(|v| format!("{k}={v}"));
        parts.extend(f("lambda_tu", self.lambda_tu));
        parts.extend(f("lambda_du", self.lambda_du));
        parts.extend(f("tau", self.tau));
        parts.extend(self.adapt_iters.map(|v| format!("adapt_iters={v}")));
        if parts.is_empty() {
            self.method.to_string()
        } else {
            format!("{}[{}]", self.method, parts.join(","))
        }
    }

    /// The base configuration with this candidate's method and overrides (not yet validated).
    pub fn apply(&self, base: &FitConfig) -> FitConfig {
        let mut cfg = FitConfig { method: self.method, ..base.clone() };
        if let Some(v) = self.lambda_tu {
            cfg.mul.lambda_tu = v;
        }
        if let Some(v) = self.lambda_du {
            cfg.mul.lambda_du = v;
        }
        if let Some(v) = self.tau {
            cfg.mul.tau = v;
        }
        if let Some(v) = self.adapt_iters {
            cfg.adapt_iters = v;
        }
        cfg
    }
}

/// The default candidates (docs/select.md says why each is there, and why there are three):
///
/// - `source`: the pre-trained network itself (`adapt_iters = 0`), i.e. no correction. It costs
///   nothing beyond the shared pre-training;
/// - `mul`: MUL's defaults;
/// - `mul-weak`: λ_TU = 0.3 (with the balance rule J_DU scales with it), a weaker alignment
///   whose class weights and pseudo-labels are MUL's.
///
/// Each MUL candidate costs one adaptation, about one default fit where pre-training is cheap
/// (157 source rows on dslr-source tasks), so a third MUL candidate (`mul-no-du`, λ_DU = 0)
/// would put `select` at or over 3× one fit there; a candidates file can still add it.
pub fn default_candidates() -> Vec<Candidate> {
    vec![
        Candidate { adapt_iters: Some(0), ..Candidate::new(MethodKind::Source) }.named("source"),
        Candidate::new(MethodKind::Mul).named("mul"),
        Candidate { lambda_tu: Some(0.3), ..Candidate::new(MethodKind::Mul) }.named("mul-weak"),
    ]
}

/// The layout of a candidates file: `[[candidate]]` tables and nothing else.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CandidatesFile {
    #[serde(default)]
    candidate: Vec<Candidate>,
}

/// Reads a candidates file; errors name the file (unreadable, invalid TOML, unknown keys, no
/// `[[candidate]]`, a candidate whose settings are out of range over `base`, repeated names).
pub fn read_candidates_file(path: &Path, base: &FitConfig) -> Result<Vec<Candidate>> {
    let text =
        std::fs::read_to_string(path).map_err(|e| Error::Io { path: path.into(), source: e })?;
    let file: CandidatesFile = toml::from_str(&text)
        .map_err(|e| Error::bad_file(path, format!("invalid candidates file: {e}")))?;
    check_candidates(&file.candidate, base).map_err(|e| Error::bad_file(path, e.to_string()))?;
    Ok(file.candidate)
}

/// At least one candidate, distinct names, and every candidate's configuration valid.
pub(super) fn check_candidates(
    candidates: &[Candidate],
    base: &FitConfig,
) -> Result<Vec<FitConfig>> {
    if candidates.is_empty() {
        return Err(Error::param(
            "candidates",
            "[]",
            "no candidate to select from: add at least one [[candidate]] with a method",
        ));
    }
    let mut names = std::collections::BTreeSet::new();
    candidates
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let name = c.label();
            if !names.insert(name.clone()) {
                return Err(Error::param(
                    "candidate.name",
                    &name,
                    format!("candidate {} repeats a name; names must be distinct", i + 1),
                ));
            }
            let cfg = c.apply(base);
            cfg.validate().map_err(|e| {
                Error::bad_data(format!("candidate {} ('{name}')", i + 1), e.to_string())
            })?;
            Ok(cfg)
        })
        .collect()
}
