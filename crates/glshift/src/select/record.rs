//! `selection.json`, written by `glshift select`: the label-free selection, the task's
//! protocol, and (when the target has labels) every candidate's accuracy after the choice.

use serde::{Deserialize, Serialize};

use super::{CandidateAccuracies, Selection};
use crate::records::Protocol;

/// The whole file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SelectionFile {
    pub glshift_version: String,
    pub source: String,
    pub target: String,
    pub protocol: Protocol,
    pub selection: Selection,
    /// Absent (not `null`) when the target has no labels.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_evaluation: Option<CandidateAccuracies>,
    pub elapsed_seconds: f64,
}
