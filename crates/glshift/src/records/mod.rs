//! Record types of the files glshift writes and reads back, one type per file format, shared
//! by the writer and the reader: [`Protocol`] (how a task was built from two domains, part of
//! `report.json`), [`BenchRecord`] (one run of a bench grid, an entry of `results.json`).
//! [`ShiftEstimateFile`] (`glshift shift estimate`), [`ShiftTestFile`] (`glshift shift test`).
//! `report.json` itself is [`crate::pipeline::FitReport`], `selection.json`
//! [`crate::select::SelectionFile`].

mod bench;
mod cond_shift;
mod protocol;
mod shift_estimate;

pub use bench::{BenchRecord, FailedRun};
pub use cond_shift::{ClassTestRecord, ShiftTestFile, TestSeconds};
pub use protocol::Protocol;
pub use shift_estimate::{
    ClassifierRecord, Conditioning, ConditioningOutcome, EstimateInput, ShiftEstimateFile,
    TrainRows, TrainedInput,
};
