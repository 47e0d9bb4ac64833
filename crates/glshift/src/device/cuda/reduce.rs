//! Column reductions on a device (BatchNorm's statistics and gradients, bias gradients, the
//! kernel sums' pooled mean): partial sums over fixed chunks of rows by `col_part`, then their
//! sum in chunk order by `col_finish`, so results do not depend on how the device schedules
//! its threads.

use super::backend::{Arg, Backend, K};

/// Rows per partial column sum: chunks × width threads keep the GPU busy at any width.
const CHUNK_ROWS: usize = 128;

/// Which column reduction `col_reduce` runs.
#[derive(Clone, Copy)]
pub(super) enum Reduce {
    /// Σ_r a[r, j].
    Sum,
    /// Σ_r (a[r, j] − b[j])² (`b` the mean, length d).
    SqDev,
    /// Σ_r a[r, j]·b[r, j].
    Dot,
}

/// `scale`·(the reduction over the first `rows` rows of `a`, width `d`) into a new buffer.
pub(super) fn col_reduce<D: Backend + ?Sized>(
    dev: &D,
    what: Reduce,
    a: &D::Buf,
    b: Option<&D::Buf>,
    rows: usize,
    d: usize,
    scale: f32,
) -> Result<D::Buf, String> {
    let mut out = dev.zeros(d)?;
    col_reduce_into(dev, what, a, b, rows, d, scale, &mut out)?;
    Ok(out)
}

/// [`col_reduce`] into `out` (length d): partial sums over chunks of [`CHUNK_ROWS`] rows,
/// then their sum in chunk order (deterministic).
#[allow(clippy::too_many_arguments)]
pub(super) fn col_reduce_into<D: Backend + ?Sized>(
    dev: &D,
    what: Reduce,
    a: &D::Buf,
    b: Option<&D::Buf>,
    rows: usize,
    d: usize,
    scale: f32,
    out: &mut D::Buf,
) -> Result<(), String> {
    let chunks = rows.div_ceil(CHUNK_ROWS).max(1);
    let mut part = dev.zeros(chunks * d)?;
    // The kernel's mode; a sum reads no second operand (`a` stands in for it).
    let (mode, b) = match (what, b) {
        (Reduce::Sum, _) => (0, a),
        (Reduce::SqDev, Some(b)) => (1, b),
        (Reduce::Dot, Some(b)) => (2, b),
        (_, None) => return Err("a column reduction lacks its second operand".into()),
    };
    let [rows, d_, chunk, mode] = [rows, d, CHUNK_ROWS, mode].map(|v| Arg::I32(v as i32));
    let mut args = [Arg::In(a), Arg::In(b), Arg::Out(&mut part), rows, d_, chunk, mode];
    dev.launch(K::ColPart, chunks * d, &mut args)?;
    dev.launch(
        K::ColFinish,
        d,
        &mut [
            Arg::In(&part),
            Arg::Out(out),
            Arg::I32(chunks as i32),
            Arg::I32(d as i32),
            Arg::F32(scale),
        ],
    )
}
