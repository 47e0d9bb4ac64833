//! Record types of the files glshift writes and reads back, one type per file format, shared
//! by the writer and the reader: [`Protocol`] (how a task was built from two domains, part of
//! `report.json`), [`BenchRecord`] (one run of a bench grid, an entry of `results.json`).
//! `report.json` itself is [`crate::pipeline::FitReport`].

mod bench;
mod protocol;

pub use bench::{BenchRecord, FailedRun};
pub use protocol::Protocol;
