//! The report crate's error type. Every variant names the file or figure concerned.

use std::path::PathBuf;

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A file of the run or bench folder is missing or unreadable.
    #[error("{path}: cannot read: {reason}")]
    Read { path: PathBuf, reason: String },

    /// A file was read but its content is not what a glshift run leaves there.
    #[error("{path}: {reason}")]
    BadFile { path: PathBuf, reason: String },

    /// The folder is neither a run folder (report.json) nor a bench folder (results.json).
    #[error("{path}: {reason}")]
    NotAReportFolder { path: PathBuf, reason: String },

    /// Drawing a figure failed.
    #[error("figure {figure}: {reason}")]
    Plot { figure: String, reason: String },

    /// Invalid input to a figure or computation (shapes, empty data).
    #[error("{what}: {reason}")]
    BadInput { what: String, reason: String },

    /// An error of the glshift library (training, metrics, writing).
    #[error(transparent)]
    Glshift(#[from] glshift::Error),
}

impl Error {
    pub fn bad_input(what: impl Into<String>, reason: impl Into<String>) -> Self {
        Error::BadInput { what: what.into(), reason: reason.into() }
    }

    pub fn bad_file(path: impl Into<PathBuf>, reason: impl Into<String>) -> Self {
        Error::BadFile { path: path.into(), reason: reason.into() }
    }
}
