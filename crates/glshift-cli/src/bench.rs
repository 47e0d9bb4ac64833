//! `glshift bench`: arguments and progress of the grid of (task, method, seed) runs; the grid
//! itself (resumable records, `results.json`, `table.md`) is `glshift_experiments::grid`.

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;
use glshift::methods::MethodKind;
use glshift_experiments::grid::{self, GridObserver, GridSpec, Variant};
use indicatif::{ProgressBar, ProgressStyle};

use crate::fit::resolve_config_on;
use crate::pair::RunArgs;

#[derive(Args, Debug)]
pub struct BenchArgs {
    #[command(flatten)]
    pub grid: GridArgs,
    /// Methods (rows of the table): `source`, `mul` or baselines (docs/methods.md; an unknown
    /// name lists every method).
    #[arg(long, value_delimiter = ',', default_value = "source,mul")]
    pub methods: Vec<String>,
}

/// The arguments every grid command shares: data, protocol, tasks, seeds, output.
#[derive(Args, Debug)]
#[command(mut_arg("config", |a| a.help("TOML settings over the defaults, shared by every run")))]
pub struct GridArgs {
    /// Folder holding the domains.
    #[arg(long)]
    pub data: PathBuf,
    /// Task protocol: uda (domains unchanged), pda (the target keeps the first --pda-classes
    /// classes), gls (source subsampled as in Combes et al.) or msda (each target with every
    /// other domain pooled as its source).
    #[arg(long, value_enum, default_value_t = crate::pair::SettingArg::Uda)]
    pub setting: crate::pair::SettingArg,
    /// Number of target classes kept in pda (default: half of the classes).
    #[arg(long)]
    pub pda_classes: Option<usize>,
    /// Tasks as SOURCE:TARGET pairs (default: every ordered pair of domains in the folder).
    #[arg(long, value_delimiter = ',', conflicts_with = "targets")]
    pub tasks: Option<Vec<String>>,
    /// With --setting msda: the target domains (default: every domain), each with every other
    /// domain as its sources.
    #[arg(long, value_delimiter = ',')]
    pub targets: Option<Vec<String>>,
    #[arg(long, value_delimiter = ',', default_value = "0,1,2")]
    pub seeds: Vec<u64>,
    #[command(flatten)]
    pub run: RunArgs,
    /// Also keep each run's model file (runs/….glshift, a few MB each; for `glshift predict`).
    #[arg(long)]
    pub keep_models: bool,
}

impl GridArgs {
    fn spec(&self) -> GridSpec {
        GridSpec {
            data: self.data.clone(),
            setting: self.setting.as_str().to_string(),
            pda_classes: self.pda_classes,
            tasks: self.tasks.clone(),
            targets: self.targets.clone(),
            seeds: self.seeds.clone(),
            out: self.run.out.clone(),
            keep_models: self.keep_models,
        }
    }
}

pub fn run(args: BenchArgs) -> Result<()> {
    let methods: Vec<MethodKind> =
        args.methods.iter().map(|m| m.parse()).collect::<Result<_, _>>()?;
    let base = resolve_config_on(args.grid.run.config.as_ref(), None, None, args.grid.run.device)?;
    run_grid(&args.grid, &grid::method_variants(&methods, &base)?)
}

/// The grid's progress as a bar (hidden with `--quiet`); notes print above it.
struct Bar(ProgressBar);

impl GridObserver for Bar {
    fn start(&mut self, total: u64) {
        self.0.set_length(total);
    }
    fn run(&mut self, what: &str) {
        self.0.set_message(what.to_string());
    }
    fn done(&mut self) {
        self.0.inc(1);
    }
    fn note(&mut self, msg: &str) {
        self.0.suspend(|| eprintln!("{msg}"));
    }
}

/// Runs the grid with a progress bar and prints its table.
pub fn run_grid(args: &GridArgs, variants: &[Variant]) -> Result<()> {
    let bar = if args.run.quiet { ProgressBar::hidden() } else { ProgressBar::new(0) };
    bar.set_style(
        ProgressStyle::with_template("bench [{bar:30}] {pos}/{len} {msg} ({elapsed}, eta {eta})")?
            .progress_chars("=> "),
    );
    let mut obs = Bar(bar);
    let outcome = grid::run_grid(&args.spec(), variants, &mut obs)?;
    obs.0.finish_and_clear();
    println!("{}", outcome.table);
    Ok(())
}
