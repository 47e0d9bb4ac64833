//! The error type of the extraction library: every variant names the file and the problem.

use std::path::PathBuf;

/// Errors of weights reading, network building, image decoding and folder walking.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The weights file could not be read from disk.
    #[error("cannot read weights file {path}: {reason}")]
    WeightsIo { path: PathBuf, reason: String },
    /// The weights file is not a well-formed PyTorch `state_dict` (damaged, truncated, other format).
    #[error("weights file {path} is damaged or not a PyTorch state_dict: {reason}")]
    WeightsFormat { path: PathBuf, reason: String },
    /// The weights file is a readable `state_dict` but not of EfficientNet-Lite2.
    #[error("weights file {path} does not hold EfficientNet-Lite2 weights: {reason}")]
    WrongArchitecture { path: PathBuf, reason: String },
    /// One image could not be opened or decoded.
    #[error("cannot decode image {path}: {reason}")]
    Image { path: PathBuf, reason: String },
    /// A folder could not be listed.
    #[error("cannot list folder {path}: {reason}")]
    Folder { path: PathBuf, reason: String },
    /// The images folder holds no domain, or a domain holds no image.
    #[error("no images found in {path}: {reason}")]
    Empty { path: PathBuf, reason: String },
    /// Every file of a domain was skipped as unreadable.
    #[error("domain {domain}: none of its {files} files could be decoded (first: {first})")]
    NothingDecoded { domain: String, files: usize, first: String },
    /// The tensor library failed (shape mismatch inside the network: a bug, reported not panicked).
    #[error("inference failed: {0}")]
    Inference(String),
    /// Writing the output files failed.
    #[error(transparent)]
    Output(#[from] glshift::Error),
}

impl From<candle_core::Error> for Error {
    fn from(e: candle_core::Error) -> Error {
        Error::Inference(e.to_string())
    }
}

/// The result type of this crate.
pub type Result<T> = std::result::Result<T, Error>;
