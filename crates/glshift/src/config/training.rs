//! How a fit iterates over its rows: full-batch (every row in every step, as the paper trains
//! on Office-Caltech10-sized data) or by mini-batch with a memory bank (per-step cost set by the
//! batch, not by n; `train::bank`). `training = "auto"` chooses by problem size alone.
//!
//! The threshold of `auto` is [`AUTO_MINIBATCH_CELLS`] = rows × dims of source + target:
//! Office-Caltech10 (2 533 rows × 1 280 dims, 3.2 M cells) and every data set the project
//! ships stay full-batch, so their results are unchanged bit for bit. The measurement behind
//! it is in docs/performance.md ("Large data"): past it a full-batch fit costs minutes and
//! gigabytes and a mini-batch fit is faster.

use serde::{Deserialize, Serialize};

use crate::{Error, Result};

/// `training`: full-batch, mini-batch, or chosen by size.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Training {
    /// Mini-batch when source + target rows × dims exceed [`AUTO_MINIBATCH_CELLS`].
    #[default]
    Auto,
    FullBatch,
    MiniBatch,
}

/// Rows × dims (source + target) above which `auto` trains by mini-batch: 20 M cells, e.g.
/// 10 000 rows of 2 048 dims (a full-batch default fit there took 5–7 min and 611 MiB;
/// docs/performance.md).
pub const AUTO_MINIBATCH_CELLS: usize = 20_000_000;

impl Training {
    /// Whether a fit on `n_rows` rows (source + target) of dimension `d` trains by mini-batch.
    pub fn is_minibatch(self, n_rows: usize, d: usize) -> bool {
        match self {
            Training::Auto => n_rows.saturating_mul(d) > AUTO_MINIBATCH_CELLS,
            Training::FullBatch => false,
            Training::MiniBatch => true,
        }
    }
}

/// Settings of mini-batch training (`training = "mini-batch"`, or `auto` on large data).
/// `pretrain_iters` and `adapt_iters` count mini-batch steps there.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MiniBatchConfig {
    /// Source rows per step, drawn class-stratified (every class with rows in every batch);
    /// as many target rows.
    pub batch_size: usize,
    /// Rows per domain taken from the memory bank (their latest Z, as constants) to join the
    /// batch in J_TU and J_DU, so the conditional embeddings rest on more than one batch.
    pub context_rows: usize,
    /// Steps between full views: evaluation-mode probabilities and Z of every hold-out and
    /// target row, in chunks (temperature, BBSE-QP, pseudo-labels, the bank, the stop rule).
    pub refresh_every: usize,
    /// Pre-training steps between two hold-out evaluations (the stop rule's observations).
    pub eval_every: usize,
    /// Source training rows (a seeded sample) whose statistics every BatchNorm uses in
    /// evaluation mode.
    pub bn_stats_rows: usize,
    /// Rows per chunk of the full passes (bounded memory).
    pub chunk_rows: usize,
}

impl Default for MiniBatchConfig {
    fn default() -> Self {
        MiniBatchConfig {
            batch_size: 512,
            context_rows: 1024,
            refresh_every: 25,
            eval_every: 25,
            bn_stats_rows: 8192,
            chunk_rows: 8192,
        }
    }
}

impl MiniBatchConfig {
    pub fn validate(&self) -> Result<()> {
        let fields = [
            ("minibatch.batch_size", self.batch_size),
            ("minibatch.refresh_every", self.refresh_every),
            ("minibatch.eval_every", self.eval_every),
            ("minibatch.bn_stats_rows", self.bn_stats_rows),
            ("minibatch.chunk_rows", self.chunk_rows),
        ];
        for (name, v) in fields {
            if v == 0 {
                return Err(Error::param(name, v, "must be >= 1"));
            }
        }
        if self.batch_size < 2 {
            return Err(Error::param(
                "minibatch.batch_size",
                self.batch_size,
                "must be >= 2 (BatchNorm needs two rows)",
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_is_full_batch_at_office_caltech_size_and_minibatch_at_visda_size() {
        assert!(!Training::Auto.is_minibatch(2_533, 1_280));
        assert!(!Training::Auto.is_minibatch(10_000, 2_000));
        assert!(Training::Auto.is_minibatch(207_785, 2_048));
        assert!(Training::MiniBatch.is_minibatch(10, 2));
        assert!(!Training::FullBatch.is_minibatch(usize::MAX, usize::MAX));
    }

    #[test]
    fn zero_sizes_are_refused_by_name() {
        let c = MiniBatchConfig { batch_size: 1, ..Default::default() };
        assert!(matches!(c.validate(), Err(Error::Param { name: "minibatch.batch_size", .. })));
        let c = MiniBatchConfig { refresh_every: 0, ..Default::default() };
        assert!(matches!(c.validate(), Err(Error::Param { name: "minibatch.refresh_every", .. })));
        MiniBatchConfig::default().validate().unwrap();
    }

    #[test]
    fn reads_from_toml() {
        let c: crate::config::FitConfig =
            toml::from_str("training = \"mini-batch\"\n[minibatch]\nbatch_size = 64").unwrap();
        assert_eq!((c.training, c.minibatch.batch_size), (Training::MiniBatch, 64));
        assert!(toml::from_str::<crate::config::FitConfig>("training = \"sometimes\"").is_err());
    }
}
