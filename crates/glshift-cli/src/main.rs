//! `glshift`: the command-line front of the glshift library.

// Product code: no function over clippy.toml's 80 lines (test code may be longer).
#![cfg_attr(not(test), warn(clippy::too_many_lines))]

mod ablation;
mod bench;
mod core_values;
mod demo;
mod extract;
mod fit;
mod generate;
mod iw;
mod monitor;
mod pair;
mod perf;
mod predict;
mod progress;
mod report;
mod select;
mod shift;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "glshift",
    version,
    about = "Generalized label shift correction with Minimum Uncertainty Learning (MUL)"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Train on a labelled source domain and an unlabelled target domain; write report.json and predictions.csv.
    Fit(fit::FitArgs),
    /// Fit a few candidate configurations (shared pre-training), choose one by label-free scores; write selection.json and the chosen model.
    Select(select::SelectArgs),
    /// Apply a saved model (OUT/model.glshift of `fit`) to a domain or a features file; write predictions.csv and report.json.
    Predict(predict::PredictArgs),
    /// A saved model on a folder of batches (NAME_features.npy): each batch's class proportions, alarms; write batches.csv and monitor.html.
    Monitor(monitor::MonitorArgs),
    /// Run `source` and `mul` on a built-in seeded synthetic generalized-label-shift task (no files needed).
    Demo(demo::DemoArgs),
    /// Run a grid of tasks × methods × seeds under a protocol (uda, pda, gls, msda); resumable.
    Bench(bench::BenchArgs),
    /// The paper's ablation of MUL (w,y / J_TU / J_DU / class-wise MMD) as a bench grid; resumable.
    Ablation(ablation::AblationArgs),
    /// Write RUN_DIR/report.html (a fit) or BENCH_DIR/report.html (a bench grid) with the analysis figures.
    Report(report::ReportArgs),
    /// The importance-weighting ablation: decision regions of a 2-D MUL model with and without IW (first 4 classes, 2 shared).
    IwAblation(iw::IwArgs),
    /// Label-shift estimation on saved class probabilities (BBSE, BBSE-QP, RLLS, MLLS) with bootstrap intervals.
    Shift(shift::ShiftArgs),
    /// Time one J_TU + J_DU loss and gradient (exact or random features) against the FLOP bound and the Python stack.
    Perf(perf::PerfArgs),
    /// Image folders (DIR/<domain>/<class>/*) to EfficientNet-Lite2 features in the npy layout fit reads.
    Extract(extract::ExtractArgs),
    /// Write a synthetic generalized-label-shift data folder of any size (domains `source`, `target`), in chunks.
    Generate(generate::GenerateArgs),
}

fn main() -> ExitCode {
    follow_rayon_thread_count();
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Fit(args) => fit::run(args),
        Command::Select(args) => select::run(args),
        Command::Predict(args) => predict::run(args),
        Command::Monitor(args) => monitor::run(args),
        Command::Demo(args) => demo::run(args),
        Command::Bench(args) => bench::run(args),
        Command::Ablation(args) => ablation::run(args),
        Command::Shift(args) => shift::run(args),
        Command::Report(args) => report::run(args),
        Command::IwAblation(args) => iw::run(args),
        Command::Perf(args) => perf::run(args),
        Command::Extract(args) => extract::run(args),
        Command::Generate(args) => generate::run(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            // The context chain, each cause once (some errors already quote their cause).
            let mut msg = e.to_string();
            for cause in e.chain().skip(1) {
                let c = cause.to_string();
                if !msg.contains(&c) {
                    msg = format!("{msg}: {c}");
                }
            }
            eprintln!("error: {msg}");
            ExitCode::FAILURE
        }
    }
}

/// `RAYON_NUM_THREADS=N` caps ndarray's GEMM (matrixmultiply, `MATMUL_NUM_THREADS`) at N threads
/// too, unless `MATMUL_NUM_THREADS` is set: otherwise a "one thread" process still split every
/// product over both cores, which under load nearly doubled a baseline fit's wall time (52 s vs
/// 93 s side by side, docs/results-baselines.md). The thread count never changes a result. Runs first
/// in `main`, before any thread exists and before matrixmultiply reads the variable.
fn follow_rayon_thread_count() {
    if std::env::var_os("MATMUL_NUM_THREADS").is_none() {
        if let Some(n) = std::env::var_os("RAYON_NUM_THREADS") {
            std::env::set_var("MATMUL_NUM_THREADS", n);
        }
    }
}
