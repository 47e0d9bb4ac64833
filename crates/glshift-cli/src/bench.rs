//! `glshift bench`: a grid of (task, method, seed) runs with resumable per-run records,
//! `results.json` and a `table.md` laid out like the paper's tables. `glshift ablation` runs the
//! same grid over MUL variants instead of methods ([`run_grid`]).

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use clap::Args;
use glshift::data;
use glshift::eval::mean_std;
use glshift::methods::{FitConfig, MethodKind, PretrainCache};
use glshift::output::write_files_atomically;
use glshift::pipeline;
use glshift::protocol::{self, Protocol};
use indicatif::{ProgressBar, ProgressStyle};
use serde::{Deserialize, Serialize};

use crate::fit::resolve_config;

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
pub struct GridArgs {
    /// Folder holding the domains.
    #[arg(long)]
    pub data: PathBuf,
    /// uda, pda or gls.
    #[arg(long, default_value = "uda")]
    pub setting: String,
    /// Number of target classes kept in pda (default: half of the classes).
    #[arg(long)]
    pub pda_classes: Option<usize>,
    /// Tasks as SOURCE:TARGET pairs (default: every ordered pair of domains in the folder).
    #[arg(long, value_delimiter = ',')]
    pub tasks: Option<Vec<String>>,
    #[arg(long, value_delimiter = ',', default_value = "0,1,2")]
    pub seeds: Vec<u64>,
    /// TOML settings over the defaults, shared by every run.
    #[arg(long)]
    pub config: Option<PathBuf>,
    #[arg(long)]
    pub out: PathBuf,
    #[arg(long)]
    pub quiet: bool,
}

/// One finished run.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RunRecord {
    pub method: String,
    pub setting: String,
    pub source: String,
    pub target: String,
    pub seed: u64,
    pub target_accuracy: f64,
    pub prior_l1_error: Option<f64>,
    pub source_target_prior_l1: f64,
    pub source_class_counts: Vec<usize>,
    pub target_class_counts: Vec<usize>,
    pub elapsed_seconds: f64,
    /// Pre-training came from an earlier run of the grid on the same task and seed (the methods
    /// share it; results are unchanged), so `elapsed_seconds` excludes it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub pretraining_reused: bool,
    /// The full settings of the run (method and seed included). A record is resumed only when
    /// these equal the settings the grid would use now; records without them are redone.
    #[serde(default)]
    pub config: serde_json::Value,
}

/// One row of the table: a method, or a configuration variant of one (the ablation).
pub struct Variant {
    /// File-safe name: the record file names and `results.json`'s `method`.
    pub id: String,
    /// The row label in `table.md`.
    pub label: String,
    pub cfg: FitConfig,
}

fn parse_tasks(args: &GridArgs) -> Result<Vec<(String, String)>> {
    if let Some(list) = &args.tasks {
        return list
            .iter()
            .map(|t| match t.split_once(':') {
                Some((s, d)) if !s.is_empty() && !d.is_empty() => Ok((s.to_string(), d.to_string())),
                _ => bail!("--tasks entry {t:?} is not SOURCE:TARGET"),
            })
            .collect();
    }
    let domains = data::list_domains(&args.data)?;
    if domains.len() < 2 {
        bail!("{}: found {} domain(s), need at least 2 for a task", args.data.display(), domains.len());
    }
    Ok(domains
        .iter()
        .flat_map(|s| domains.iter().filter(move |t| *t != s).map(move |t| (s.clone(), t.clone())))
        .collect())
}

fn record_path(out: &Path, setting: &str, method: &str, s: &str, t: &str, seed: u64) -> PathBuf {
    out.join("runs").join(format!("{setting}__{method}__{s}__{t}__seed{seed}.json"))
}

pub fn run(args: BenchArgs) -> Result<()> {
    let methods: Vec<MethodKind> = args.methods.iter().map(|m| m.parse()).collect::<Result<_, _>>()?;
    let base = resolve_config(args.grid.config.as_ref(), None, None)?;
    let variants: Vec<Variant> = methods
        .iter()
        .map(|&method| Variant { id: method.to_string(), label: method.to_string(), cfg: FitConfig { method, ..base.clone() } })
        .collect();
    for v in &variants {
        v.cfg.validate().with_context(|| format!("method {}", v.id))?;
    }
    run_grid(&args.grid, &variants)
}

/// Runs every (task, variant, seed), resuming from the records under `OUT/runs/`, then writes
/// `results.json` and `table.md` (with the grid's wall time) and prints the table.
pub fn run_grid(args: &GridArgs, variants: &[Variant]) -> Result<()> {
    let started = std::time::Instant::now();
    let tasks = parse_tasks(args)?;
    let total = (tasks.len() * variants.len() * args.seeds.len()) as u64;
    let bar = if args.quiet { ProgressBar::hidden() } else { ProgressBar::new(total) };
    bar.set_style(ProgressStyle::with_template("bench [{bar:30}] {pos}/{len} {msg} ({elapsed}, eta {eta})")?.progress_chars("=> "));

    let mut records = Vec::new();
    let mut resumed = 0usize;
    // Each data warning once per task, not once per method and seed.
    let mut warned = std::collections::HashSet::new();
    for (s, t) in &tasks {
        let (src0, tgt0) = data::load_pair(&args.data, s, t)?;
        let proto = Protocol::parse(&args.setting, src0.n_classes(), args.pda_classes)?;
        let (src, tgt) = protocol::apply(proto, &src0, &tgt0)?;
        // Every method of this task and seed pre-trains the same network on the same rows.
        let mut pretrained = PretrainCache::new();
        for variant in variants {
            let method = &variant.id;
            for &seed in &args.seeds {
                let path = record_path(&args.out, proto.name(), method, s, t, seed);
                bar.set_message(format!("{method} {s}→{t} seed {seed}"));
                let cfg = FitConfig { seed, ..variant.cfg.clone() };
                let cfg_value = serde_json::to_value(&cfg)?;
                // Resume: a record is written atomically, so an existing one is complete; it is
                // reused only if it was made with the same settings (else a changed default or
                // --config would silently mix old and new runs in one table).
                if let Ok(bytes) = std::fs::read(&path) {
                    if let Ok(r) = serde_json::from_slice::<RunRecord>(&bytes) {
                        if r.config == cfg_value {
                            records.push(r);
                            resumed += 1;
                            bar.inc(1);
                            continue;
                        }
                        bar.suspend(|| {
                            eprintln!("{}: made with other settings; running it again", path.display())
                        });
                    }
                }
                let out = pipeline::run_cached(&src, &tgt, &cfg, &mut pretrained, &mut |_| {})
                    .with_context(|| format!("{method} {s}→{t} seed {seed}"))?;
                let r = &out.report;
                for w in &r.warnings {
                    if warned.insert(format!("{s}→{t}: {w}")) {
                        bar.suspend(|| eprintln!("warning: {s}→{t}: {w}"));
                    }
                }
                let rec = RunRecord {
                    method: method.clone(),
                    setting: proto.name().to_string(),
                    source: s.clone(),
                    target: t.clone(),
                    seed,
                    target_accuracy: r.target_accuracy.context("the target has no labels to score")?,
                    prior_l1_error: r.prior_l1_error,
                    source_target_prior_l1: r.source_target_prior_l1.unwrap_or(f64::NAN),
                    source_class_counts: protocol::class_counts(&src).unwrap_or_default(),
                    target_class_counts: protocol::class_counts(&tgt).unwrap_or_default(),
                    elapsed_seconds: r.elapsed_seconds,
                    pretraining_reused: r.pretraining_reused,
                    config: cfg_value,
                };
                write_files_atomically(&[(path, serde_json::to_vec_pretty(&rec)?)])?;
                records.push(rec);
                bar.inc(1);
            }
        }
    }
    bar.finish_and_clear();
    let rows: Vec<(&str, &str)> = variants.iter().map(|v| (v.id.as_str(), v.label.as_str())).collect();
    let mut table = render_table(&records, &tasks, &rows, &args.seeds);
    // A resumed grid's wall time covers only this call, so the runs' own times are summed too.
    let run_seconds: f64 = records.iter().map(|r| r.elapsed_seconds).sum();
    let reused = records.iter().filter(|r| r.pretraining_reused).count();
    table.push_str(&format!(
        "\n{} runs ({resumed} read back from runs/), wall time {:.0} s for this call; the runs' own times sum to {:.0} s \
         ({reused} runs reused the pre-training of an earlier method on the same task and seed, and their times exclude it).\n",
        records.len(),
        started.elapsed().as_secs_f64(),
        run_seconds
    ));
    write_files_atomically(&[
        (args.out.join("results.json"), serde_json::to_vec_pretty(&records)?),
        (args.out.join("table.md"), table.clone().into_bytes()),
    ])?;
    println!("{table}");
    Ok(())
}

fn short(name: &str) -> String {
    name.chars().next().map(|c| c.to_ascii_uppercase().to_string()).unwrap_or_default()
}

/// Tasks as columns, methods as rows (`(id, label)`: records are matched on the id, the row
/// shows the label), mean ± std over seeds (in %), an Avg column whose std is over the per-seed
/// averages, the ‖pˢ − pᵗ‖₁ row, and the best mean of each column in bold.
pub fn render_table(records: &[RunRecord], tasks: &[(String, String)], methods: &[(&str, &str)], seeds: &[u64]) -> String {
    let initials: Vec<String> = tasks.iter().map(|(s, t)| format!("{}→{}", short(s), short(t))).collect();
    let unique = initials.iter().collect::<std::collections::BTreeSet<_>>().len() == initials.len();
    let headers: Vec<String> = if unique { initials } else { tasks.iter().map(|(s, t)| format!("{s}→{t}")).collect() };
    let acc = |m: &str, s: &str, t: &str, seed: u64| {
        records
            .iter()
            .find(|r| r.method == m && r.source == s && r.target == t && r.seed == seed)
            .map(|r| 100.0 * r.target_accuracy)
    };
    // cells[method][task] = (mean, std); last column = average over tasks.
    let mut cells: Vec<Vec<(f64, f64)>> = Vec::new();
    for &(m, _) in methods {
        let mut row: Vec<(f64, f64)> = tasks
            .iter()
            .map(|(s, t)| mean_std(&seeds.iter().filter_map(|&sd| acc(m, s, t, sd)).collect::<Vec<_>>()))
            .collect();
        let per_seed_avg: Vec<f64> = seeds
            .iter()
            .filter_map(|&sd| {
                let v: Vec<f64> = tasks.iter().filter_map(|(s, t)| acc(m, s, t, sd)).collect();
                (v.len() == tasks.len()).then(|| v.iter().sum::<f64>() / v.len() as f64)
            })
            .collect();
        row.push(mean_std(&per_seed_avg));
        cells.push(row);
    }
    let ncol = tasks.len() + 1;
    let best: Vec<f64> = (0..ncol)
        .map(|j| cells.iter().map(|r| r[j].0).filter(|v| v.is_finite()).fold(f64::NEG_INFINITY, f64::max))
        .collect();
    let mut out = format!("| method | {} | Avg |\n|---|{}\n", headers.join(" | "), "---|".repeat(ncol));
    for ((_, m), row) in methods.iter().zip(&cells) {
        let fmt: Vec<String> = row
            .iter()
            .enumerate()
            .map(|(j, &(mean, sd))| {
                let s = format!("{mean:.1} ± {sd:.1}");
                if (mean - best[j]).abs() < 1e-9 && methods.len() > 1 { format!("**{s}**") } else { s }
            })
            .collect();
        out.push_str(&format!("| {m} | {} |\n", fmt.join(" | ")));
    }
    let shifts: Vec<String> = tasks
        .iter()
        .map(|(s, t)| {
            records
                .iter()
                .find(|r| &r.source == s && &r.target == t)
                .map(|r| format!("{:.2}", r.source_target_prior_l1))
                .unwrap_or_default()
        })
        .collect();
    let all: Vec<f64> = shifts.iter().filter_map(|v| v.parse().ok()).collect();
    let avg = if all.is_empty() { String::new() } else { format!("{:.2}", all.iter().sum::<f64>() / all.len() as f64) };
    out.push_str(&format!("| ‖pˢ − pᵗ‖₁ | {} | {avg} |\n", shifts.join(" | ")));
    out
}
