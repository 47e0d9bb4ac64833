//! `glshift shift`: label-shift estimation (`estimate`, on saved probabilities or by training
//! the source classifier itself), known-truth simulation (`simulate`), the estimation study
//! (`study`) and the conditional shift test (`test`, `test-calibration`).

mod conditional;
mod estimate;
mod estimate_checks;
mod study;

use anyhow::Result;
use clap::{Args, Subcommand};

pub use estimate::EstimateArgs;
pub use study::{SimulateArgs, StudyArgs};

#[derive(Args, Debug)]
pub struct ShiftArgs {
    #[command(subcommand)]
    pub command: ShiftCommand,
}

#[derive(Subcommand, Debug)]
pub enum ShiftCommand {
    /// Estimate the target prior and importance weights, from saved probabilities
    /// (--source-probs/--source-labels/--target-probs) or by training the source classifier
    /// on a data folder (--data/--source/--target).
    Estimate(EstimateArgs),
    /// Resample a labelled domain to a requested class prior (known truth): writes a source
    /// part and a disjoint simulated target in the npy layout, plus simulation.json.
    Simulate(SimulateArgs),
    /// The label-shift estimation study: every estimator on simulated targets of every prior
    /// family; writes study.json and study.md.
    Study(StudyArgs),
    /// Per-class conditional two-sample test after a fit: MCMD² between the source hold-out
    /// rows and the target rows the model assigns to each class, permutation p-values, Holm.
    Test(conditional::TestArgs),
    /// Level and power of `shift test` on one domain split in two (and against a real domain).
    TestCalibration(conditional::CalibrationArgs),
}

pub fn run(args: ShiftArgs) -> Result<()> {
    match args.command {
        ShiftCommand::Estimate(a) => estimate::estimate(a),
        ShiftCommand::Simulate(a) => study::simulate_cmd(a),
        ShiftCommand::Study(a) => study::study_cmd(a),
        ShiftCommand::Test(a) => conditional::test_cmd(a),
        ShiftCommand::TestCalibration(a) => conditional::calibration_cmd(a),
    }
}
