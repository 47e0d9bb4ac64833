//! The one error type of the core library. Every variant carries the offending value
//! (file, parameter, shape) so that a command-line user can act on the message alone.

use std::path::PathBuf;

/// Result alias used throughout the crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A file could not be opened or read.
    #[error("{path}: cannot read file: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    /// A file was read but its content is not what the loader expects.
    #[error("{path}: {reason}")]
    BadFile { path: PathBuf, reason: String },

    /// A domain name that matches no file in the data folder.
    #[error("{dir}: no data for domain '{domain}' ({reason})")]
    UnknownDomain { dir: PathBuf, domain: String, reason: String },

    /// Feature or label values that cannot be used (NaN, Inf, out of range, ...).
    #[error("{what}: {reason}")]
    BadData { what: String, reason: String },

    /// Two arrays that must agree in shape do not.
    #[error("shape mismatch: {what}: expected {expected}, found {found}")]
    Shape { what: String, expected: String, found: String },

    /// A hyper-parameter outside its valid range.
    #[error("invalid parameter `{name}` = {value}: {reason}")]
    Param { name: &'static str, value: String, reason: String },

    /// A numerical routine failed (singular system, solver did not converge, NaN loss).
    #[error("numerical failure in {what}: {reason}")]
    Numerical { what: String, reason: String },

    /// `device = "cuda"` was asked for and no usable GPU was found, or the GPU failed mid-run.
    #[error("device {requested}: {reason}")]
    Device { requested: String, reason: String },

    /// Writing an output file failed.
    #[error("{path}: cannot write output: {reason}")]
    Write { path: PathBuf, reason: String },
}

impl Error {
    /// Shorthand for [`Error::Param`].
    pub fn param(
        name: &'static str,
        value: impl std::fmt::Display,
        reason: impl Into<String>,
    ) -> Self {
        Error::Param { name, value: value.to_string(), reason: reason.into() }
    }

    /// `Ok` when the setting `name` is finite and within [lo, hi], else [`Error::Param`] with `what`.
    pub(crate) fn check_range(
        name: &'static str,
        v: f64,
        lo: f64,
        hi: f64,
        what: &str,
    ) -> Result<(), Error> {
        if v.is_finite() && v >= lo && v <= hi {
            Ok(())
        } else {
            Err(Error::param(name, v, what.to_string()))
        }
    }

    /// Shorthand for [`Error::BadData`].
    pub fn bad_data(what: impl Into<String>, reason: impl Into<String>) -> Self {
        Error::BadData { what: what.into(), reason: reason.into() }
    }

    /// Shorthand for [`Error::BadFile`].
    pub fn bad_file(path: impl Into<PathBuf>, reason: impl Into<String>) -> Self {
        Error::BadFile { path: path.into(), reason: reason.into() }
    }

    /// Shorthand for [`Error::Numerical`].
    pub fn numerical(what: impl Into<String>, reason: impl Into<String>) -> Self {
        Error::Numerical { what: what.into(), reason: reason.into() }
    }
}
