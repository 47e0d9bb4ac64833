//! Record types of the files glshift writes and reads back, one type per file format, shared
//! by the writer and the reader: [`Protocol`] (how a task was built from two domains, part of
//! `report.json`), [`BenchRecord`] (one run of a bench grid, an entry of `results.json`).
//! [`ShiftEstimateFile`] (`glshift shift estimate`), [`ShiftTestFile`] (`glshift shift test`).
//! `report.json` itself is [`crate::pipeline::FitReport`], `selection.json`
//! [`crate::select::SelectionFile`].

mod bench;
mod protocol;
mod shift_estimate;
mod shift_test;

pub use bench::{BenchRecord, FailedRun};
pub use protocol::Protocol;
pub use shift_estimate::{
    ClassifierRecord, Conditioning, ConditioningOutcome, EstimateInput, ShiftEstimateFile,
    TrainRows, TrainedInput,
};
pub use shift_test::{ClassTestRecord, ShiftTestFile, TestSeconds};
