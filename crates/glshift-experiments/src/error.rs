//! The experiments crate's one error type. Every variant carries the offending value (parameter,
//! file, task) so that a command-line user can act on the message alone; errors of the core
//! library pass through unchanged.

use std::path::PathBuf;

/// Result alias used throughout the crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A setting of an experiment outside its valid range.
    #[error("invalid parameter `{name}` = {value}: {reason}")]
    Param { name: &'static str, value: String, reason: String },

    /// Data an experiment cannot use (missing labels, an empty class selection, ...).
    #[error("{what}: {reason}")]
    BadData { what: String, reason: String },

    /// A numerical step of an experiment failed.
    #[error("numerical failure in {what}: {reason}")]
    Numerical { what: String, reason: String },

    /// Writing an output file failed.
    #[error("{path}: cannot write output: {reason}")]
    Write { path: PathBuf, reason: String },

    /// A `SOURCE:TARGET` task entry that does not parse.
    #[error("--tasks entry {entry:?} is not SOURCE:TARGET")]
    BadTask { entry: String },

    /// A data folder with fewer than two domains, so no task.
    #[error("{}: found {found} domain(s), need at least 2 for a task", dir.display())]
    TooFewDomains { dir: PathBuf, found: usize },

    /// One run of a grid (or study) failed; `run` names it ("mul amazon→webcam seed 0").
    #[error("{run}")]
    Run {
        run: String,
        #[source]
        source: Box<Error>,
    },

    /// An error of the glshift library (loading, training, scoring, writing).
    #[error(transparent)]
    Core(#[from] glshift::Error),
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

    /// Shorthand for [`Error::BadData`].
    pub fn bad_data(what: impl Into<String>, reason: impl Into<String>) -> Self {
        Error::BadData { what: what.into(), reason: reason.into() }
    }

    /// Shorthand for [`Error::Numerical`].
    pub fn numerical(what: impl Into<String>, reason: impl Into<String>) -> Self {
        Error::Numerical { what: what.into(), reason: reason.into() }
    }

    /// Wraps `e` as the failure of the run named `run`.
    pub fn run(run: impl Into<String>, e: impl Into<Error>) -> Self {
        Error::Run { run: run.into(), source: Box::new(e.into()) }
    }
}
