//! What the device's kernel sums (`sums`) are asked: per domain its rows, on the host or on
//! the device, and its labels; the S blocks, the objectives, h.

use ndarray::ArrayView2;

use crate::kernel::tiled::request::Objective;

/// Where a domain's rows come from: the host (n × d), or `rows` (by index) of the `n` × d
/// matrix `z` on the device.
pub(crate) enum RowsFrom<'a, B> {
    Host(ArrayView2<'a, f32>),
    Device { z: &'a B, n: usize, rows: &'a [usize] },
}

/// Kernel sums whose rows may lie on the device: per domain its rows and its labels (on the
/// host, n_a × c), the S blocks wanted in full, the objectives, h and the rows' width d; and
/// whether the products may run in TF32 (`tf32_kernel_sums`).
pub(crate) struct Sums<'a, B> {
    pub(crate) rows: Vec<RowsFrom<'a, B>>,
    pub(crate) labels: Vec<ArrayView2<'a, f32>>,
    pub(crate) s_blocks: &'a [(usize, usize)],
    pub(crate) objectives: &'a [Objective],
    pub(crate) h: f64,
    pub(crate) d: usize,
    pub(crate) tf32: bool,
}
