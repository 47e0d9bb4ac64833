//! `glshift-extract`: image folders → EfficientNet-Lite2 features in the npy layout `glshift fit`
//! reads. Reads PyTorch `.pth` weights ([`pth`]), runs the network on CPU with candle
//! ([`model`]), reproduces the PIL/torchvision preprocessing ([`preprocess`]).

pub mod arch;
mod error;
pub mod model;
mod pickle;
pub mod preprocess;
pub mod pth;

pub use error::{Error, Result};
pub use model::EffNetLite2;
