//! `glshift-extract`: image folders → EfficientNet-Lite2 features in the npy layout `glshift fit`
//! reads. Reads PyTorch `.pth` weights ([`pth`]), runs the network on CPU with candle
//! ([`model`]), reproduces the PIL/torchvision preprocessing ([`preprocess`]), walks
//! `DIR/<domain>/<class>/*` ([`walk`]), extracts per domain ([`extract`]) and writes the
//! outputs atomically ([`write`]).

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
