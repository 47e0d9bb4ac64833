//! `glshift perf --host-iteration SOURCE,TARGET`: the host's share of one full-batch iteration
//! (`glshift_experiments::perf::host`), printed per call or as one JSON object.

use anyhow::{bail, Result};
use glshift_experiments::perf::host::measure_host_share;

use super::PerfArgs;

pub fn run(args: &PerfArgs, rows: &[usize]) -> Result<()> {
    let [n_source, n_target] = rows else {
        bail!("--host-iteration takes two row counts, SOURCE,TARGET (got {} values)", rows.len());
    };
    let share = measure_host_share(*n_source, *n_target, args.c, args.seed, args.runs)?;
    if args.json {
        println!("{}", serde_json::to_string(&share)?);
        return Ok(());
    }
    println!(
        "host share of a full-batch iteration: {} source rows ({} held out) + {} target rows, c = {}, {} threads, median of {} runs",
        share.n_source, share.n_holdout, share.n_target, share.c, share.threads, share.runs
    );
    for call in &share.calls {
        println!(
            "  {:12} {:40} {:8.2} ms (min {:.2})",
            call.stage, call.call, call.median_ms, call.min_ms
        );
    }
    println!(
        "  adaptation iteration: {:.1} ms; pre-training iteration: {:.1} ms",
        share.adaptation_ms, share.pretraining_ms
    );
    Ok(())
}
