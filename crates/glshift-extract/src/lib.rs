//! `glshift-extract`: image folders → EfficientNet-Lite2 features in the npy layout `glshift fit`
//! reads. Reads PyTorch `.pth` weights ([`pth`]), runs the network on CPU with candle
//! ([`model`]), reproduces the PIL/torchvision preprocessing ([`preprocess`]), walks
//! `DIR/<domain>/<class>/*` ([`walk`]), extracts per domain ([`extract`]) and writes the
//! outputs atomically ([`write`]).

// Product code: no function over clippy.toml's 80 lines (test code may be longer).
#![cfg_attr(not(test), warn(clippy::too_many_lines))]

pub mod arch;
mod depthwise;
mod error;
pub mod extract;
pub mod model;
mod pickle;
pub mod preprocess;
pub mod pth;
pub mod walk;
pub mod write;

pub use error::{Error, Result};
pub use model::EffNetLite2;
