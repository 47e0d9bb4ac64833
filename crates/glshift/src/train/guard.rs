//! Guards of the training loop: NaN/Inf checks with advice naming the settings to change, and
//! the memory estimate that refuses hopeless configurations before allocating.

use super::records::Stage;
use crate::config::FitConfig;
use crate::methods::method_info::Family;
#[cfg(test)]
use crate::methods::MethodKind;
use crate::{Error, Result};

/// What to do when training diverges in `stage`, naming the settings that control that
/// stage for `cfg.method`: pre-training and the full-batch methods step with `optimizer`; the
/// papers' mini-batch baselines with `baselines.lr` and their transfer weight
/// `baselines.trade_off`; MUL and class-wise MMD weigh their terms with `mul.lambda_*`.
pub(super) fn divergence_advice(cfg: &FitConfig, stage: Stage) -> String {
    let features =
        format!("or check the scale of the features (`preprocess`, now {})", cfg.preprocess);
    let lr = format!("`optimizer.lr` (now {:?})", cfg.optimizer.lr);
    let k = cfg.method;
    let what = match (stage, k.info().family) {
        (Stage::Pretrain, _) | (Stage::Adapt, Family::Source) => lr,
        (Stage::Adapt, Family::Mul) => {
            format!(
                "{lr} or `mul.lambda_tu`/`mul.lambda_du` (now {:?}/{:?})",
                cfg.mul.lambda_tu, cfg.mul.lambda_du
            )
        }
        (Stage::Adapt, Family::Baseline) if cfg.baselines.minibatch(k) => format!(
            "`baselines.lr` (now {:?}, {k}'s mini-batch SGD) or `baselines.trade_off` (now {:?})",
            cfg.baselines.lr, cfg.baselines.trade_off
        ),
        (Stage::Adapt, _) => {
            format!("{lr} or `baselines.trade_off` (now {:?})", cfg.baselines.trade_off)
        }
    };
    format!("training diverged; lower {what}, {features}")
}

/// Stops training when a loss term is NaN/Inf, naming the stage, iteration and term.
pub(super) fn check_finite(
    what: &str,
    iter: usize,
    stage: Stage,
    v: f64,
    cfg: &FitConfig,
) -> Result<()> {
    if v.is_finite() {
        Ok(())
    } else {
        Err(Error::numerical(
            format!("{stage:?} iteration {iter}"),
            format!("{what} is {v}: {}", divergence_advice(cfg, stage)),
        ))
    }
}

/// A GPU failure, as the fit's error: the stage it stops is redone on the CPU from its start
/// (`pretrain_full::pretrain_on`, `adapt_loop::adapt_with_fallback`).
pub(super) fn device_error(reason: String) -> Error {
    Error::Device { requested: "cuda".into(), reason }
}

/// The error of a non-finite gradient: `term` names the culprit.
pub(super) fn gradient_error(stage: Stage, iter: usize, term: &str, cfg: &FitConfig) -> Error {
    Error::numerical(
        format!("{stage:?} iteration {iter}"),
        format!("{term} is not finite: {}", divergence_advice(cfg, stage)),
    )
}

/// Resident memory of the process before the data (binary, runtime, thread pools), in bytes.
const BASE_BYTES: f64 = 64.0 * 1024.0 * 1024.0;

/// Estimated peak memory in bytes of a full-batch fit on `n_rows` rows (source + target) of
/// dimension `d` with `c` classes: per row, 2 f32 copies of its features and 5 of its
/// activations (the hidden widths and the logits); the parameters of G and F 7 times (with their
/// gradient, two Adam moments and the best pre-training snapshot); and a fixed base. The kernel
/// terms are tiled, so nothing grows with n² (an n² term here once refused a 20 000-row fit
/// that peaked at 1.46 GB as needing 9.9 GiB).
///
/// The per-row copies are measured, not itemised: the loaded features are preprocessed in
/// place and moved into the fit, the layout's stack is the second copy, and the network's
/// forward pass keeps no copy of its input (docs/performance.md, "The forward pass's copy of
/// its input").
/// `crates/glshift-cli/tests/memory_estimate.rs` holds the estimate between 1 and 1.6 times a
/// fit's measured peak. Meant to refuse hopeless configurations before allocating, so an upper
/// estimate.
pub fn memory_estimate_bytes(n_rows: usize, d: usize, c: usize, cfg: &FitConfig) -> f64 {
    let (n, df) = (n_rows as f64, d as f64);
    let (params, widths) = network_size(d, c, cfg);
    4.0 * (2.0 * n * df + 5.0 * n * widths + 7.0 * params) + BASE_BYTES
}

/// Estimated peak memory in bytes of a mini-batch fit (`training`, `config::training`) on
/// `n_rows` rows of dimension `d`: one copy of the features (the caller's, preprocessed in
/// place; the training loop copies none), per row 1.5 f32 vectors of width z_dim + c (the
/// fit's returned Z and probabilities of every row, and the bank's of the target rows), the
/// features and activations of one step's rows (batch and context rows of both domains) and of
/// one chunk of a full pass, the parameters 7 times, and the base.
///
/// Measured peaks of `glshift fit` with the default network and `[minibatch]` settings: 193 MiB
/// at 20 000 rows × 1 024 dims (the test's fit; 78 MiB of features) and 2 018 MiB at the
/// VisDA-2017 shape, 207 785 × 2 048 (1 623 MiB of features): 1.5 KB per row beyond the
/// features, which the per-row term accounts for (docs/performance.md, "Large data").
pub fn minibatch_memory_estimate_bytes(n_rows: usize, d: usize, c: usize, cfg: &FitConfig) -> f64 {
    minibatch_memory_estimate_bytes_of(n_rows, d, c, cfg, true)
}

/// [`minibatch_memory_estimate_bytes`] of a fit whose feature rows are in memory
/// (`rows_in_memory`) or read from files a batch and a chunk at a time (then no `n × d` term).
pub fn minibatch_memory_estimate_bytes_of(
    n_rows: usize,
    d: usize,
    c: usize,
    cfg: &FitConfig,
    rows_in_memory: bool,
) -> f64 {
    let (n, df) = (n_rows as f64, d as f64);
    let (params, widths) = network_size(d, c, cfg);
    let z_dim = *cfg.network.hidden.last().unwrap_or(&0) as f64;
    let mb = &cfg.minibatch;
    let step_rows = 2.0 * (mb.batch_size + mb.context_rows) as f64;
    let chunk_rows = mb.chunk_rows.max(mb.bn_stats_rows) as f64;
    let per_row = 1.5 * n * (z_dim + c as f64);
    let step = step_rows * (df + widths);
    let chunk = chunk_rows * (df + widths);
    let features = if rows_in_memory { n * df } else { 0.0 };
    4.0 * (features + per_row + step + chunk + 7.0 * params) + BASE_BYTES
}

/// Parameters of G and F, and the summed widths of G's layers and the logits.
fn network_size(d: usize, c: usize, cfg: &FitConfig) -> (f64, f64) {
    let (d, c) = (d as f64, c as f64);
    let mut params = 0.0;
    let mut width_in = d;
    for &h in &cfg.network.hidden {
        params += (width_in + 1.0) * h as f64;
        width_in = h as f64;
    }
    params += (width_in + 1.0) * c;
    let widths: f64 = cfg.network.hidden.iter().map(|&h| h as f64).sum::<f64>() + c;
    (params, widths)
}

/// Refuses a fit whose estimate ([`memory_estimate_bytes`], or
/// [`minibatch_memory_estimate_bytes_of`] when it trains by mini-batch) exceeds
/// `cfg.max_memory_gib`; its feature rows are in memory or, when not `rows_in_memory`, read
/// from files (mini-batch fits only).
pub fn check_memory_of(
    n_rows: usize,
    d: usize,
    c: usize,
    cfg: &FitConfig,
    rows_in_memory: bool,
) -> Result<()> {
    let minibatch = cfg.uses_minibatch(n_rows, d);
    let bytes = if minibatch {
        minibatch_memory_estimate_bytes_of(n_rows, d, c, cfg, rows_in_memory)
    } else {
        memory_estimate_bytes(n_rows, d, c, cfg)
    };
    let gib = bytes / (1u64 << 30) as f64;
    if gib > cfg.max_memory_gib {
        return Err(Error::param(
            "max_memory_gib",
            cfg.max_memory_gib,
            format!(
                "training {n_rows} rows of dimension {d} {} with hidden widths {:?} needs about {gib:.1} GiB; \
                 reduce the feature dimension (e.g. PCA) or the first hidden width, {}or raise \
                 `max_memory_gib` in the config if the machine has the memory",
                if minibatch { "by mini-batch" } else { "full-batch" },
                cfg.network.hidden,
                if minibatch { "" } else { "train by mini-batch (`training = \"mini-batch\"`), " }
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn advice(method: MethodKind, stage: Stage) -> String {
        divergence_advice(&FitConfig { method, ..FitConfig::default() }, stage)
    }

    #[test]
    fn divergence_advice_names_the_settings_of_the_stage_and_method() {
        let pre = advice(MethodKind::IwDann, Stage::Pretrain);
        assert!(pre.contains("`optimizer.lr`") && !pre.contains("baselines"), "{pre}");
        let mul = advice(MethodKind::Mul, Stage::Adapt);
        assert!(mul.contains("`optimizer.lr`") && mul.contains("`mul.lambda_tu`"), "{mul}");
        // The papers' baselines step with their own SGD: optimizer.lr and mul.* do not apply.
        let iw = advice(MethodKind::IwDann, Stage::Adapt);
        assert!(iw.contains("`baselines.lr`") && iw.contains("`baselines.trade_off`"), "{iw}");
        assert!(!iw.contains("optimizer.lr") && !iw.contains("mul.lambda"), "{iw}");
        let coral = advice(MethodKind::Coral, Stage::Adapt);
        assert!(
            coral.contains("`optimizer.lr`") && coral.contains("`baselines.trade_off`"),
            "{coral}"
        );
        assert!(advice(MethodKind::Source, Stage::Adapt).contains("`optimizer.lr`"));
    }
}
