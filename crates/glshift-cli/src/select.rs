//! `glshift select`: fit a few candidate configurations on one task (one shared pre-training),
//! score each without target labels, keep the best; write OUT/selection.json and the chosen
//! model's report.json, predictions.csv and model file, all atomically (docs/select.md).

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result};
use clap::Args;
use glshift::output::write_files_atomically_with;
use glshift::records::Protocol;
use glshift::select::{
    default_candidates, read_candidates_file, SelectOutcome, SelectParams, SelectRule,
    SelectionFile,
};
use glshift_experiments::protocol;

use crate::fit::{check_out_dir, resolve_config_on, run_files};
use crate::pair::{PairArgs, ProtocolArgs, RunArgs, SeedArg};
use crate::progress::TrainBar;

#[derive(Args, Debug)]
#[command(
    mut_arg("config", |a| a.help("TOML file of settings over the defaults: the base every candidate overrides")),
    mut_arg("out", |a| a.help("Output folder for selection.json and the chosen model's files"))
)]
pub struct SelectArgs {
    #[command(flatten)]
    pub pair: PairArgs,
    /// TOML file of `[[candidate]]` tables (docs/select.md); default: source, mul, mul-weak.
    #[arg(long)]
    pub candidates: Option<PathBuf>,
    /// Selection rule (docs/select.md; the default was decided by the scorer study).
    #[arg(long, value_parser = crate::core_values::parser::<SelectRule>(), default_value = SelectRule::default().name())]
    pub scorer: SelectRule,
    #[command(flatten)]
    pub protocol: ProtocolArgs,
    #[command(flatten)]
    pub seed: SeedArg,
    #[command(flatten)]
    pub run: RunArgs,
}

pub fn run(args: SelectArgs) -> Result<()> {
    let base = resolve_config_on(args.run.config.as_ref(), None, args.seed.get(), args.run.device)?;
    let candidates = match &args.candidates {
        Some(path) => read_candidates_file(path, &base)?,
        None => default_candidates(),
    };
    let params = SelectParams::new(base).candidates(candidates).rule(args.scorer).check()?;
    let created = check_out_dir(&args.run.out)?;
    let result = run_checked(&args, &params);
    if result.is_err() && created {
        // Only removes the folder this run created, and only while it is still empty.
        let _ = std::fs::remove_dir(&args.run.out);
    }
    result
}

fn run_checked(args: &SelectArgs, params: &glshift::select::CheckedSelectParams) -> Result<()> {
    let started = Instant::now();
    let mut bar: Option<(usize, TrainBar)> = None;
    let mut progress = |i: usize, p| {
        if bar.as_ref().map(|b| b.0) != Some(i) {
            if let Some((_, b)) = bar.take() {
                b.finish();
            }
            let label = format!(
                "candidate {}/{} {}→{}",
                i + 1,
                params.configs().len(),
                args.pair.source,
                args.pair.target
            );
            bar = Some((i, TrainBar::new(&label, args.run.quiet)));
        }
        if let Some((_, b)) = bar.as_ref() {
            b.update(p);
        }
    };
    let task = select_task(args, params, &mut progress);
    if let Some((_, b)) = bar.take() {
        b.finish();
    }
    let (mut outcome, proto, source, target) = task.with_context(|| {
        format!("selecting on {} → {} failed", args.pair.source, args.pair.target)
    })?;
    let elapsed = started.elapsed().as_secs_f64();
    outcome.chosen.report.protocol = proto;
    let file = SelectionFile {
        glshift_version: env!("CARGO_PKG_VERSION").to_string(),
        source,
        target,
        protocol: proto,
        selection: outcome.selection.clone(),
        target_evaluation: outcome.evaluation.clone(),
        elapsed_seconds: elapsed,
    };
    let (staged, mut files) = run_files(&args.run.out, &outcome.chosen)?;
    files.push((args.run.out.join("selection.json"), serde_json::to_vec_pretty(&file)?));
    write_files_atomically_with(staged, &files)?;
    print_summary(&outcome, elapsed);
    eprintln!("wrote {}", args.run.out.display());
    Ok(())
}

/// The selection on the task of `args`: one source under `--setting`, or several pooled
/// (`--setting uda` only, as `fit`); with the protocol and the source and target names.
fn select_task(
    args: &SelectArgs,
    params: &glshift::select::CheckedSelectParams,
    progress: &mut dyn FnMut(usize, glshift::train::Progress),
) -> Result<(SelectOutcome, Protocol, String, String)> {
    let sources = args.pair.sources()?;
    if sources.len() > 1 {
        let (pooled, target) = args.pair.load_pooled(&sources, &args.protocol)?;
        let outcome = params.select_pooled(&pooled, &target, progress)?;
        return Ok((outcome, Protocol::Uda, pooled.pooled.name.clone(), target.name));
    }
    let (source, target) = args.pair.load()?;
    let proto = args.protocol.parse(source.n_classes())?;
    // By value: a domain the protocol leaves whole is moved, not copied.
    let (source, target) = protocol::apply_owned(proto, source, target)?;
    let outcome = params.select(&source, &target, progress)?;
    Ok((outcome, proto, source.name, target.name))
}

fn print_summary(o: &SelectOutcome, elapsed: f64) {
    let s = &o.selection;
    let f = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.4}"));
    eprintln!(
        "{:<14} {:>8} {:>8} {:>8} {:>8} {:>8} {:>9} {:>6}",
        "candidate", "iwcv", "dev-n", "snd", "-entropy", "circular", "rule", "adapt"
    );
    for c in &s.candidates {
        let sc = &c.scores;
        eprintln!(
            "{:<14} {:>8} {:>8} {:>8} {:>8} {:>8} {:>9} {:>6}",
            c.name,
            f(sc.iwcv),
            f(sc.dev_normalised),
            f(sc.snd),
            f(sc.neg_entropy),
            f(sc.circular),
            f(c.rule_value),
            c.adapt_iterations
        );
    }
    // Each distinct warning once, with the candidates it concerns (most are the data's).
    let mut seen: Vec<(&str, Vec<&str>)> = Vec::new();
    for c in &s.candidates {
        for w in &c.warnings {
            match seen.iter_mut().find(|(t, _)| *t == w.as_str()) {
                Some((_, names)) => names.push(c.name.as_str()),
                None => seen.push((w.as_str(), vec![c.name.as_str()])),
            }
        }
    }
    seen.iter().for_each(|(w, names)| eprintln!("warning ({}): {w}", names.join(", ")));
    eprintln!("chosen: {} — {}", s.chosen_name, s.reason);
    if let Some(e) = &o.evaluation {
        let accs: Vec<String> = s
            .candidates
            .iter()
            .zip(&e.target_accuracy)
            .map(|(c, a)| format!("{} {:.2}%", c.name, 100.0 * a))
            .collect();
        eprintln!("target accuracy (evaluation only, after the choice): {}", accs.join(", "));
    }
    eprintln!("select took {elapsed:.1} s");
}
