//! The target class prior of a simulation: parsed from the command line, then drawn per
//! simulation for the domain's classes.

use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Gamma};
use serde::Serialize;

use crate::{Error, Result};

/// A target class prior to simulate.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum PriorSpec {
    /// A symmetric Dirichlet(α, …, α) draw per simulation.
    Dirichlet { alpha: f64 },
    /// Partial DA: the first `c / 2` classes uniform, the others 0.
    Pda,
    /// A fixed prior (length c, ≥ 0, sums to 1).
    Fixed(Vec<f64>),
}

impl PriorSpec {
    /// Parses `dirichlet:ALPHA`, `pda`, or `p1,p2,...`. The length of a fixed prior is checked
    /// against the classes in [`PriorSpec::draw`].
    pub fn parse(s: &str) -> Result<PriorSpec> {
        let s = s.trim();
        if let Some(a) = s.strip_prefix("dirichlet:") {
            let alpha: f64 = a.trim().parse().map_err(|_| {
                Error::param(
                    "prior",
                    s,
                    "dirichlet:ALPHA needs a number ALPHA > 0, e.g. dirichlet:1",
                )
            })?;
            if !(alpha.is_finite() && alpha > 0.0) {
                return Err(Error::param(
                    "prior",
                    s,
                    "the Dirichlet concentration ALPHA must be finite and > 0",
                ));
            }
            return Ok(PriorSpec::Dirichlet { alpha });
        }
        if s == "pda" {
            return Ok(PriorSpec::Pda);
        }
        let mut p = Vec::new();
        for part in s.split(',') {
            let v: f64 = part.trim().parse().map_err(|_| {
                Error::param(
                    "prior",
                    s,
                    "expected dirichlet:ALPHA, pda, or comma-separated probabilities p1,p2,...",
                )
            })?;
            if !(v.is_finite() && v >= 0.0) {
                return Err(Error::param(
                    "prior",
                    s,
                    format!("entry {v} is negative or not finite"),
                ));
            }
            p.push(v);
        }
        let sum: f64 = p.iter().sum();
        if (sum - 1.0).abs() > 1e-6 {
            return Err(Error::param("prior", s, format!("the probabilities sum to {sum}, not 1")));
        }
        Ok(PriorSpec::Fixed(p))
    }

    /// Short label for tables (`dirichlet:0.1`, `pda`, `fixed`).
    pub fn label(&self) -> String {
        match self {
            PriorSpec::Dirichlet { alpha } => format!("dirichlet:{alpha}"),
            PriorSpec::Pda => "pda".into(),
            PriorSpec::Fixed(_) => "fixed".into(),
        }
    }

    /// The prior for `c` classes (a fresh Dirichlet draw from `rng`; the others are fixed).
    pub fn draw(&self, c: usize, rng: &mut ChaCha8Rng) -> Result<Vec<f64>> {
        if c < 2 {
            return Err(Error::param(
                "prior",
                self.label(),
                format!("needs at least 2 classes, the domain has {c}"),
            ));
        }
        match self {
            PriorSpec::Fixed(p) => {
                if p.len() != c {
                    return Err(Error::param(
                        "prior",
                        format!("{p:?}"),
                        format!("has {} entries, the domain has {c} classes", p.len()),
                    ));
                }
                Ok(p.clone())
            }
            PriorSpec::Pda => {
                let k = (c / 2).max(1);
                Ok((0..c).map(|j| if j < k { 1.0 / k as f64 } else { 0.0 }).collect())
            }
            PriorSpec::Dirichlet { alpha } => {
                let g = Gamma::new(*alpha, 1.0)
                    .map_err(|e| Error::param("prior", alpha, e.to_string()))?;
                // A draw whose every component underflows to 0 (possible for tiny α) is redrawn.
                for _ in 0..1000 {
                    let x: Vec<f64> = (0..c).map(|_| g.sample(rng)).collect();
                    let s: f64 = x.iter().sum();
                    if s > 0.0 && s.is_finite() {
                        return Ok(x.iter().map(|v| v / s).collect());
                    }
                }
                Err(Error::numerical(
                    "Dirichlet draw",
                    format!("α = {alpha}: every draw underflowed to 0"),
                ))
            }
        }
    }
}
