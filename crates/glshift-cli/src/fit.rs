//! `glshift fit`: load two domains, build the task (uda, pda or gls), train, and write
//! report.json, predictions.csv, the model (`model.glshift`, for `glshift predict`) and the
//! representations Z (`z_*.npy`, `labels_*.npy`) atomically.

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;
use glshift::config::{ConfigOverrides, ConfigSource, FitConfig};
use glshift::output::{write_files_atomically_with, StagedFile};
use glshift::pipeline;
use glshift::records::Protocol;
use glshift_experiments::protocol;

use crate::pair::{PairArgs, ProtocolArgs, RunArgs, SeedArg};
use crate::progress::TrainBar;

/// The model file `fit` writes into its output folder (`glshift predict --model`).
pub const MODEL_FILE: &str = "model.glshift";

#[derive(Args, Debug)]
#[command(mut_arg("out", |a| a.help("Output folder for report.json, predictions.csv and model.glshift")))]
pub struct FitArgs {
    #[command(flatten)]
    pub pair: PairArgs,
    /// Method: `mul`, `source` or a baseline (docs/methods.md; an unknown name lists every
    /// method). Overrides the config file.
    #[arg(long)]
    pub method: Option<String>,
    #[command(flatten)]
    pub protocol: ProtocolArgs,
    #[command(flatten)]
    pub seed: SeedArg,
    #[command(flatten)]
    pub run: RunArgs,
}

/// Builds the configuration: defaults, then the TOML file, then command-line flags.
pub fn resolve_config(
    config: Option<&PathBuf>,
    method: Option<&str>,
    seed: Option<u64>,
) -> Result<FitConfig> {
    resolve_config_on(config, method, seed, None)
}

/// [`resolve_config`] with `--device`.
pub fn resolve_config_on(
    config: Option<&PathBuf>,
    method: Option<&str>,
    seed: Option<u64>,
    device: Option<glshift::device::Device>,
) -> Result<FitConfig> {
    let source = config.map_or(ConfigSource::Defaults, |p| ConfigSource::TomlFile(p));
    let overrides = ConfigOverrides { method, seed, device, ..Default::default() };
    Ok(FitConfig::resolve(source, overrides)?)
}

/// "cuda (NVIDIA H100 …)", or "cpu" with the reason `auto` fell back.
pub fn device_line(d: &glshift::device::DeviceUsed) -> String {
    let mut line = d.kind.clone();
    if let Some(name) = &d.name {
        line += &format!(" ({name})");
    }
    if d.tf32_kernel_sums {
        line += ", kernel sums in TF32";
    }
    if let Some(why) = &d.fallback {
        line += &format!(": {why}");
    }
    line
}

pub fn run(args: FitArgs) -> Result<()> {
    let cfg = resolve_config_on(
        args.run.config.as_ref(),
        args.method.as_deref(),
        args.seed.get(),
        args.run.device,
    )?;
    let created = check_out_dir(&args.run.out)?;
    let result = run_checked(&args, &cfg);
    if result.is_err() && created {
        // Only removes the folder this run created, and only while it is still empty.
        let _ = std::fs::remove_dir(&args.run.out);
    }
    result
}

fn run_checked(args: &FitArgs, cfg: &FitConfig) -> Result<()> {
    let bar = TrainBar::new(
        &format!("{} {}→{}", cfg.method, args.pair.source, args.pair.target),
        args.run.quiet,
    );
    let sources = args.pair.sources()?;
    let (out, proto) = if sources.len() > 1 {
        (pooled_run(args, cfg, &sources, &bar)?, Protocol::Uda)
    } else {
        match open_on_disk(args, cfg)? {
            Some((pair, proto)) => (pipeline::run_files(&pair, cfg, &mut |p| bar.update(p)), proto),
            None => {
                let (source, target) = args.pair.load()?;
                let proto = args.protocol.parse(source.n_classes())?;
                // By value from here on: the run preprocesses the loaded features in place (one
                // copy).
                let (source, target) = protocol::apply_owned(proto, source, target)?;
                (pipeline::run_owned(source, target, cfg, &mut |p| bar.update(p)), proto)
            }
        }
    };
    bar.finish();
    let mut out = out
        .with_context(|| format!("training {} → {} failed", args.pair.source, args.pair.target))?;
    out.report.protocol = proto;
    let (staged, files) = run_files(&args.run.out, &out)?;
    write_files_atomically_with(staged, &files)?;
    let r = &out.report;
    for w in &r.warnings {
        eprintln!("warning: {w}");
    }
    eprintln!(
        "{} {} → {}: {} target rows in {:.1} s",
        r.method, r.source, r.target, r.n_target, r.elapsed_seconds
    );
    eprintln!("device: {}", device_line(&r.device));
    for d in r.source_domains.iter().flatten() {
        let acc = d.holdout_accuracy.map_or("–".into(), |a| format!("{:.1}%", 100.0 * a));
        eprintln!(
            "source {}: {} rows, prior {}, hold-out accuracy {acc} ({} rows)",
            d.name,
            d.n_rows,
            fmt_vec(&d.prior),
            d.n_holdout
        );
    }
    if let Some(t) = bar.iteration_times() {
        eprintln!("time per iteration: {t}");
    }
    let n_adapt = r.history.iter().filter(|h| h.stage == glshift::train::Stage::Adapt).count();
    eprintln!(
        "{}: pre-training {} of {}, adaptation {n_adapt} of {}",
        if r.minibatch_training { "mini-batch steps (`training`)" } else { "iterations" },
        r.history.len() - n_adapt,
        cfg.pretrain_iters,
        cfg.adapt_iters
    );
    if let Some(p) = &r.estimated_target_prior {
        match &r.estimated_target_prior_untrusted {
            None => eprintln!("estimated target prior: {}", fmt_vec(p)),
            Some(why) => eprintln!("estimated target prior: {} — {why}", fmt_vec(p)),
        }
    }
    if let Some(d) = &r.diagnostics {
        d.summary_lines().iter().for_each(|l| eprintln!("{l}"));
    }
    if let Some(acc) = r.target_accuracy {
        eprintln!("target accuracy (evaluation only): {:.2}%", 100.0 * acc);
    }
    if let Some(m) = &r.embedding_metrics {
        eprintln!(
            "target J_b/J_w = {:.3} (J_b {:.4}, J_w {:.4}); mean diagonal of D^st = {:.4} (off-diagonal {:.4})",
            m.target.ratio, m.target.j_b, m.target.j_w, m.d_st_diagonal_mean, m.d_st_off_diagonal_mean
        );
    }
    eprintln!("wrote {}", args.run.out.display());
    Ok(())
}

/// A fit on several sources, pooled ([`crate::pair::PairArgs::load_pooled`]; UDA only).
fn pooled_run(
    args: &FitArgs,
    cfg: &FitConfig,
    sources: &[String],
    bar: &TrainBar,
) -> Result<glshift::Result<pipeline::RunOutput>> {
    let (pooled, target) = args.pair.load_pooled(sources, &args.protocol)?;
    Ok(pipeline::run_pooled(&pooled, &target, cfg, &mut |p| bar.update(p)))
}

/// The pair with its feature rows left in their `.npy` files, when the fit reads them from
/// there (`pipeline::reads_from_files`: it trains by mini-batch) and the task takes every row
/// (`uda`); `None`: load the pair.
fn open_on_disk(
    args: &FitArgs,
    cfg: &FitConfig,
) -> Result<Option<(glshift::data::FilePair, Protocol)>> {
    let Some(pair) =
        glshift::data::open_pair_files(&args.pair.data, &args.pair.source, &args.pair.target)?
    else {
        return Ok(None);
    };
    let proto = args.protocol.parse(pair.source.n_classes())?;
    let n_rows = pair.source_rows.nrows() + pair.target_rows.nrows();
    let on_disk =
        proto == Protocol::Uda && pipeline::reads_from_files(cfg, n_rows, pair.source_rows.ncols());
    Ok(on_disk.then_some((pair, proto)))
}

/// The files of a run, for `write_files_atomically_with` (with whatever else the command
/// writes): the representations, staged as they are written (`.npy` files the size of Z,
/// never held as bytes), and report.json, predictions.csv and the model as bytes.
pub type RunFiles = (Vec<StagedFile>, Vec<(PathBuf, Vec<u8>)>);

/// The [`RunFiles`] of `out` in `dir`.
pub fn run_files(dir: &std::path::Path, out: &pipeline::RunOutput) -> Result<RunFiles> {
    let staged = out.stage_embedding_files(dir)?;
    let files = vec![
        (dir.join("report.json"), serde_json::to_vec_pretty(&out.report)?),
        (dir.join("predictions.csv"), out.predictions_csv().into_bytes()),
        (dir.join(MODEL_FILE), out.model.to_bytes()?),
    ];
    Ok((staged, files))
}

/// Refuses an output folder that cannot be written, before any work is done: the folder is
/// created if needed and a probe file is written and removed. (Otherwise a long run would end
/// with nothing saved.) Returns whether the folder was created here.
pub fn check_out_dir(out: &std::path::Path) -> Result<bool> {
    if out.exists() && !out.is_dir() {
        anyhow::bail!("{}: --out must be a folder, and a file of that name exists", out.display());
    }
    let created = !out.exists();
    std::fs::create_dir_all(out).with_context(|| {
        format!("{}: cannot create the --out folder; choose a writable location", out.display())
    })?;
    let probe = out.join(format!(".glshift-write-probe-{}", std::process::id()));
    std::fs::write(&probe, b"").with_context(|| {
        format!(
            "{}: the --out folder is not writable; choose another folder or fix its permissions",
            out.display()
        )
    })?;
    let _ = std::fs::remove_file(&probe);
    Ok(created)
}

pub fn fmt_vec(v: &[f64]) -> String {
    let parts: Vec<String> = v.iter().map(|x| format!("{x:.3}")).collect();
    format!("[{}]", parts.join(", "))
}
