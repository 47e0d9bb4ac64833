//! The rows of the device's kernel sums (`sums`): onto the device in the layout's order, and
//! their gradients back.
//!
//! A domain's rows come from the host (uploaded as they are, read in place when contiguous)
//! or are rows of a matrix already on the device (the kept pass's Z). Either way they are
//! gathered into the layout's order there (`gather_rows`: one-hot rows sorted by class), so the
//! host only hands over indices and labels. The gradients of host rows are put back in the
//! caller's order and downloaded; those of device rows stay there, with the matrix row of each
//! (`Dom::dest`), to be added into ∂ℓ/∂Z there (`scatter_add_rows`).

use ndarray::Array2;

use super::backend::{Arg, Backend, K};
use super::reduce::{col_reduce, Reduce};
use super::sums_layout::{Layout, MAX_ORDERED_ROWS};
use super::sums_request::{RowsFrom, Sums};

/// One domain on the device, in the layout's row order: centred rows (n×d), labels (n×c),
/// squared row norms (n). Host rows: where they were reordered, the device row of each of the
/// caller's `n_caller` rows (−1 for none), to put the gradients back in the caller's order.
/// Device rows: the matrix row of each device row.
pub(super) struct Dom<B> {
    pub(super) z: B,
    pub(super) y: B,
    pub(super) norms: B,
    pub(super) n: usize,
    pub(super) n_caller: usize,
    pub(super) back: Option<B>,
    pub(super) dest: Option<B>,
}

/// G (n×d) and r (n) of one objective and domain.
pub(super) type Accumulator<B> = (B, B);

/// Per objective, per domain: its accumulator where the objective touches the domain.
pub(super) type Accumulators<B> = Vec<Vec<Option<Accumulator<B>>>>;

/// `gather_rows`: the `n` rows (d wide) `idx` names of `src`'s `n_src` rows, zeros for −1.
pub(super) fn gather<D: Backend>(
    dev: &D,
    src: &D::Buf,
    idx: &D::Buf,
    (n, d, n_src): (usize, usize, usize),
) -> Result<D::Buf, String> {
    let mut dst = dev.zeros(n * d)?;
    let [n_, d_, s_] = [n, d, n_src].map(|v| Arg::I32(v as i32));
    dev.launch(
        K::GatherRows,
        n * d,
        &mut [Arg::Out(&mut dst), Arg::In(src), Arg::In(idx), n_, d_, s_],
    )?;
    Ok(dst)
}

/// Row indices as the kernels read them (floats, exact below [`MAX_ORDERED_ROWS`]).
pub(super) fn indices<D: Backend>(
    dev: &D,
    rows: impl Iterator<Item = usize>,
) -> Result<D::Buf, String> {
    dev.upload(&rows.map(|r| r as f32).collect::<Vec<f32>>())
}

/// Checks that `rows` are rows of an `n`-row matrix on the device, few enough for the
/// kernels' float indices.
pub(super) fn check_rows_in(rows: &[usize], n: usize) -> Result<(), String> {
    if n >= MAX_ORDERED_ROWS {
        return Err(format!(
            "a device matrix of {n} rows: at most {} are indexed",
            MAX_ORDERED_ROWS - 1
        ));
    }
    match rows.iter().find(|&&r| r >= n) {
        Some(r) => Err(format!("row {r} of a {n}-row matrix is out of range")),
        None => Ok(()),
    }
}

/// Checks device rows: one per label row, each inside the `n` rows of the matrix
/// ([`check_rows_in`]), none twice (their gradients are added back without atomics).
fn check_device_rows(rows: &[usize], n: usize, n_labels: usize) -> Result<(), String> {
    if rows.len() != n_labels {
        return Err(format!("{} rows for {n_labels} label rows", rows.len()));
    }
    check_rows_in(rows, n)?;
    let mut seen = vec![false; n];
    match rows.iter().find(|&&r| std::mem::replace(&mut seen[r], true)) {
        Some(r) => Err(format!("row {r} of a {n}-row matrix is named twice")),
        None => Ok(()),
    }
}

/// Each domain's rows, centred on the pooled mean of the rows the layout keeps, their squared
/// norms and the labels, on the device, in the layout's order. The mean (column sums by chunks
/// of rows, added across domains in f64 on the host: d values) and the centring and norms
/// (`center_rows`) are the device's work; a domain's rows as the caller gave them are freed once
/// sorted. Any centre gives the same K and gradients up to rounding; the pooled mean
/// keeps the expansion ‖a‖² + ‖b‖² − 2⟨a, b⟩ well conditioned.
pub(super) fn upload_domains<D: Backend>(
    dev: &D,
    sums: &Sums<D::Buf>,
    layout: &Layout,
) -> Result<Vec<Dom<D::Buf>>, String> {
    let d = sums.d;
    let c = sums.labels.first().map_or(0, |y| y.ncols());
    let mut doms = Vec::with_capacity(sums.rows.len());
    let (mut col_sums, mut counted) = (vec![0f64; d], 0usize);
    for (a, ((rows, y), dl)) in sums.rows.iter().zip(&sums.labels).zip(&layout.doms).enumerate() {
        let n_caller = y.nrows();
        let y_all = dev.upload(y.as_standard_layout().as_slice().expect("standard layout"))?;
        let order = dl.order.as_ref().map(|o| indices(dev, o.iter().copied())).transpose()?;
        let y = match &order {
            Some(idx) => gather(dev, &y_all, idx, (dl.n, c, n_caller))?,
            None => y_all,
        };
        let (z, back, dest) = match rows {
            RowsFrom::Host(z) => {
                if z.dim() != (n_caller, d) {
                    return Err(format!(
                        "domain {a}: rows {:?} for {n_caller} label rows of width {d}",
                        z.dim()
                    ));
                }
                // A view already in standard layout is read in place (`as_standard_layout` borrows it).
                let z_all =
                    dev.upload(z.as_standard_layout().as_slice().expect("standard layout"))?;
                match (&order, &dl.order) {
                    (Some(idx), Some(o)) => {
                        let mut back = vec![-1f32; n_caller];
                        o.iter().enumerate().for_each(|(at, &row)| back[row] = at as f32);
                        (
                            gather(dev, &z_all, idx, (dl.n, d, n_caller))?,
                            Some(dev.upload(&back)?),
                            None,
                        )
                    }
                    _ => (z_all, None, None),
                }
            }
            RowsFrom::Device { z, n, rows } => {
                check_device_rows(rows, *n, n_caller).map_err(|e| format!("domain {a}: {e}"))?;
                let dest = match &dl.order {
                    Some(o) => indices(dev, o.iter().map(|&k| rows[k]))?,
                    None => indices(dev, rows.iter().copied())?,
                };
                (gather(dev, z, &dest, (dl.n, d, *n))?, None, Some(dest))
            }
        };
        if dl.n > 0 {
            let col = dev.download(&col_reduce(dev, Reduce::Sum, &z, None, dl.n, d, 1.0)?)?;
            col_sums.iter_mut().zip(&col).for_each(|(s, &v)| *s += v as f64);
            counted += dl.n;
        }
        doms.push(Dom { z, y, norms: dev.zeros(dl.n)?, n: dl.n, n_caller, back, dest });
    }
    let mean: Vec<f32> = col_sums
        .iter()
        .map(|&s| if counted > 0 { (s / counted as f64) as f32 } else { 0.0 })
        .collect();
    let mean = dev.upload(&mean)?;
    for dm in &mut doms {
        let [n, d_] = [dm.n, d].map(|v| Arg::I32(v as i32));
        dev.launch(
            K::CenterRows,
            dm.n,
            &mut [Arg::Out(&mut dm.z), Arg::In(&mean), Arg::Out(&mut dm.norms), n, d_],
        )?;
    }
    Ok(doms)
}

/// The finished gradients of host rows, downloaded in the caller's row order (zeros where an
/// objective does not touch a domain, and on rows the layout left out).
pub(super) fn download_gradients<D: Backend>(
    dev: &D,
    doms: &[Dom<D::Buf>],
    acc: Accumulators<D::Buf>,
    d: usize,
) -> Result<Vec<Vec<Array2<f32>>>, String> {
    let mut grads = Vec::with_capacity(acc.len());
    for row in acc {
        let mut per_dom = Vec::with_capacity(doms.len());
        for (dm, slot) in doms.iter().zip(row) {
            per_dom.push(match slot {
                None => Array2::zeros((dm.n_caller, d)),
                Some((ga, _)) => {
                    let mut host = match &dm.back {
                        Some(back) => {
                            dev.download(&gather(dev, &ga, back, (dm.n_caller, d, dm.n))?)?
                        }
                        None => dev.download(&ga)?,
                    };
                    host.truncate(dm.n_caller * d);
                    Array2::from_shape_vec((dm.n_caller, d), host).map_err(|e| e.to_string())?
                }
            });
        }
        grads.push(per_dom);
    }
    Ok(grads)
}

#[cfg(test)]
mod tests {
    use super::{check_device_rows, check_rows_in, MAX_ORDERED_ROWS};

    /// Rows past the matrix, named twice, not one per label row, or of a matrix too long for
    /// float indices are each an error naming the problem; distinct rows in range pass.
    #[test]
    fn device_rows_are_checked_before_the_kernels_read_them() {
        assert_eq!(check_device_rows(&[4, 0, 2], 5, 3), Ok(()));
        assert!(check_device_rows(&[4, 5], 5, 2)
            .unwrap_err()
            .contains("row 5 of a 5-row matrix is out of range"));
        assert!(check_device_rows(&[1, 3, 1], 5, 3)
            .unwrap_err()
            .contains("row 1 of a 5-row matrix is named twice"));
        assert!(check_device_rows(&[1, 3], 5, 3).unwrap_err().contains("2 rows for 3 label rows"));
        assert!(check_rows_in(&[0], MAX_ORDERED_ROWS).unwrap_err().contains("at most 16777215"));
        assert_eq!(check_rows_in(&[2, 2], 3), Ok(()));
    }
}
