//! Neural-network pieces for MUL, with gradients written by hand on ndarray
//! (`../shared/docs/stack.md`: 2–4× faster than the autodiff frameworks measured, a fraction of the build).
//!
//! - [`Network`]: G (an MLP, features → Z) and F (Linear Z → logits), trained full batch.
//!   [`Network::forward`] returns Z and the logits; [`Network::backward`] takes ∂ℓ/∂logits plus an
//!   optional extra ∂ℓ/∂Z from the kernel terms.
//! - BatchNorm statistics come from the leading `stats_rows` rows (source first), applied to all
//!   rows ([`Forward`]; `../shared/docs/pitfalls-label-shift.md`, point 4); there are no running statistics.
//! - [`weighted_cross_entropy`], [`softmax`]; [`Adam`] (AdamW).
//!
//! The layer code is generic over [`crate::Real`]: training runs in f32, and the tests check
//! every backward against central finite differences in f64.

mod activation;
mod adam;
mod adam_update;
mod batchnorm;
mod forward;
mod linear;
mod loss;
mod mlp;
mod network;
pub mod products;
pub(crate) mod rows;
mod sgd;
#[cfg(test)]
pub(crate) mod test_support;

pub use activation::{Activation, LEAKY_RELU_SLOPE};
pub use adam::{Adam, AdamConfig};
pub use batchnorm::{column_stats, BatchNorm, BnCache, BnGrad, BN_EPS};
pub use linear::{Linear, LinearGrad};
pub(crate) use loss::softmax_in_place;
pub use loss::{argmax_row, one_hot, softmax, weighted_cross_entropy};
pub use mlp::{dropout_mask, Block, BlockGrad, BnStats, Mlp};
pub use network::{stack_rows, Forward, Grads, Network, NetworkConfig, ParamKind, Pass};
pub use sgd::{Optimizer, Sgd};
