//! The mode of a forward pass ([`Forward`]), shared by the MLP blocks and the network.

/// Mode of a forward pass.
///
/// BatchNorm statistics (mean, biased variance) are taken from rows `0..stats_rows` of the input
/// and applied to ALL rows: the caller puts the source rows first (and the target rows after
/// them), so the target is normalised with source statistics (pitfall 4). `stats_rows` must be in
/// `1..=n` when the network has BatchNorm; it is ignored otherwise. `train = false` (evaluation)
/// keeps the same statistics rule and turns dropout off.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Forward {
    /// Dropout on (training) or off (evaluation).
    pub train: bool,
    /// Number of leading rows whose batch statistics BatchNorm uses.
    pub stats_rows: usize,
}

impl Forward {
    /// Training mode, statistics from the first `stats_rows` rows.
    pub fn training(stats_rows: usize) -> Self {
        Forward { train: true, stats_rows }
    }

    /// Evaluation mode (no dropout), statistics from the first `stats_rows` rows.
    pub fn evaluation(stats_rows: usize) -> Self {
        Forward { train: false, stats_rows }
    }
}
