//! The network's architecture ([`NetworkConfig`]).

use serde::{Deserialize, Serialize};

use super::super::activation::Activation;
use crate::{Error, Result};

/// Architecture of the network.
///
/// G is an MLP over `hidden` widths, each block `Linear → [BatchNorm] → activation → [dropout]`;
/// the LAST width is the dimension of Z (the representation the kernel terms act on). When
/// `activation_on_z` is false, the last block has no activation (BatchNorm and dropout, if
/// enabled, still apply). F = Linear(z_dim → c); its softmax lives in the loss.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct NetworkConfig {
    /// Widths of G's blocks, input side first; the last is z_dim. Default `[512, 256]`.
    pub hidden: Vec<usize>,
    /// Non-linearity of G. Default `relu`.
    pub activation: Activation,
    /// Dropout probability after each G block, in [0, 1); training mode only. Default 0.
    /// It applies to the last block as well, so in training mode Z itself is dropped out.
    pub dropout: f32,
    /// BatchNorm after each Linear of G (statistics: see [`Forward`]: always the source training
    /// rows, so target rows are normalised with source statistics). Default true.
    pub batch_norm: bool,
    /// Whether the last G block (producing Z) has the activation too. Default true.
    pub activation_on_z: bool,
}

impl Default for NetworkConfig {
    fn default() -> Self {
        NetworkConfig {
            hidden: vec![512, 256],
            activation: Activation::Relu,
            dropout: 0.0,
            batch_norm: true,
            activation_on_z: true,
        }
    }
}

impl NetworkConfig {
    /// Checks: `hidden` non-empty with every width ≥ 1; `dropout` finite and in [0, 1).
    pub fn validate(&self) -> Result<()> {
        if self.hidden.is_empty() {
            return Err(Error::param(
                "network.hidden",
                "[]",
                "G needs at least one layer (the last width is z_dim)",
            ));
        }
        if self.hidden.contains(&0) {
            return Err(Error::param(
                "network.hidden",
                format!("{:?}", self.hidden),
                "every width must be at least 1",
            ));
        }
        if !(self.dropout.is_finite() && (0.0..1.0).contains(&self.dropout)) {
            return Err(Error::param("network.dropout", self.dropout, "must be in [0, 1)"));
        }
        Ok(())
    }

    /// Dimension of Z (the last hidden width). Assumes a validated config.
    pub fn z_dim(&self) -> usize {
        *self.hidden.last().expect("validated config has a layer")
    }
}
