//! The only O(n²) work: S = Y_aᵀ K^{ab} Y_b and its backward pass. K is built per tile of
//! `ROW_TILE` rows of a, so memory is O(ROW_TILE·n_b) rather than O(n_a·n_b).

use crate::Real;
use ndarray::{s, Array1, Array2, ArrayView1, ArrayView2, Axis, Zip};

pub(super) const ROW_TILE: usize = 512;

fn sq_norms<T: Real>(z: ArrayView2<T>) -> Array1<T> {
    z.rows().into_iter().map(|r| r.dot(&r)).collect()
}

/// K[i, j] = exp(−‖za_i − zb_j‖²/h) from one GEMM plus row norms; the squared distance is
/// clamped at 0 because the expansion ‖a‖² + ‖b‖² − 2a·b can round below zero.
fn gauss_tile<T: Real>(
    za: ArrayView2<T>,
    na: ArrayView1<T>,
    zb: ArrayView2<T>,
    nb: ArrayView1<T>,
    inv_h: T,
) -> Array2<T> {
    let mut k = za.dot(&zb.t());
    let two = T::one() + T::one();
    Zip::indexed(&mut k).for_each(|(i, j), v| {
        let d2 = (na[i] + nb[j] - two * *v).max(T::zero());
        *v = (-d2 * inv_h).exp();
    });
    k
}

fn check_shapes<T>(
    za: &ArrayView2<T>,
    ya: &ArrayView2<T>,
    zb: &ArrayView2<T>,
    yb: &ArrayView2<T>,
    h: f64,
) {
    assert_eq!(
        za.nrows(),
        ya.nrows(),
        "kernel_sum: za and ya row counts differ"
    );
    assert_eq!(
        zb.nrows(),
        yb.nrows(),
        "kernel_sum: zb and yb row counts differ"
    );
    assert_eq!(
        za.ncols(),
        zb.ncols(),
        "kernel_sum: za and zb feature dims differ"
    );
    assert_eq!(
        ya.ncols(),
        yb.ncols(),
        "kernel_sum: ya and yb class counts differ"
    );
    assert!(
        h.is_finite() && h > 0.0,
        "kernel_sum: bandwidth h = {h} must be finite and > 0"
    );
}

/// S = Y_aᵀ K^{ab} Y_b (c×c, f64), K_ij = exp(−‖za_i − zb_j‖²/h); `za` n_a×d, `ya` n_a×c,
/// `zb` n_b×d, `yb` n_b×c (one-hot or soft). S_kl = Σ_ij ya_ik K_ij yb_jl is the unnormalised
/// inner product of class embeddings; G^{ab} = W_aᵀ S W_b gives ⟨μ̂ᵃ_k, μ̂ᵇ_l⟩ (`mcmd-math.md`).
/// Tiles are summed in f64.
///
/// # Panics
/// On inconsistent shapes or h not finite and > 0; the checked entry points
/// ([`super::mcmd2_matrix`], [`super::j_du`], [`super::j_tu`]) validate first.
pub fn kernel_sum<T: Real>(
    za: ArrayView2<T>,
    ya: ArrayView2<T>,
    zb: ArrayView2<T>,
    yb: ArrayView2<T>,
    h: f64,
) -> Array2<f64> {
    check_shapes(&za, &ya, &zb, &yb, h);
    let inv_h = T::from_f64_(1.0 / h);
    let (na, nb) = (sq_norms(za), sq_norms(zb));
    let c = ya.ncols();
    let mut s_acc = Array2::<f64>::zeros((c, c));
    for i0 in (0..za.nrows()).step_by(ROW_TILE) {
        let (r, r1) = (
            s![i0..(i0 + ROW_TILE).min(za.nrows()), ..],
            s![i0..(i0 + ROW_TILE).min(za.nrows())],
        );
        let k = gauss_tile(za.slice(r), na.slice(r1), zb, nb.view(), inv_h);
        let part = ya.slice(r).t().dot(&k.dot(&yb));
        s_acc.zip_mut_with(&part, |acc, v| *acc += v.to_f64_());
    }
    s_acc
}

/// Backward of [`kernel_sum`]: given Γ = ∂ℓ/∂S (c×c), returns (∂ℓ/∂Z_a, ∂ℓ/∂Z_b), shaped
/// like `za` and `zb`, with h constant. From `mcmd-math.md`, with H = (Y_a Γ Y_bᵀ) ∘ K:
/// ∂ℓ/∂Z_a = −(2/h)(diag(H1) Z_a − H Z_b), ∂ℓ/∂Z_b = −(2/h)(diag(Hᵀ1) Z_b − Hᵀ Z_a).
/// When a and b are the same rows, the caller adds both parts.
///
/// # Panics
/// As [`kernel_sum`], and when `gamma` is not c×c.
pub fn kernel_sum_backward<T: Real>(
    za: ArrayView2<T>,
    ya: ArrayView2<T>,
    zb: ArrayView2<T>,
    yb: ArrayView2<T>,
    h: f64,
    gamma: ArrayView2<f64>,
) -> (Array2<T>, Array2<T>) {
    check_shapes(&za, &ya, &zb, &yb, h);
    let c = ya.ncols();
    assert_eq!(
        gamma.dim(),
        (c, c),
        "kernel_sum_backward: gamma must be c×c"
    );
    let inv_h = T::from_f64_(1.0 / h);
    let scale = T::from_f64_(-2.0 / h);
    let gamma = gamma.mapv(T::from_f64_);
    let (na, nb) = (sq_norms(za), sq_norms(zb));
    let mut ga = Array2::<T>::zeros(za.raw_dim());
    let mut col_sums = Array1::<T>::zeros(zb.nrows());
    let mut ht_za = Array2::<T>::zeros(zb.raw_dim());
    for i0 in (0..za.nrows()).step_by(ROW_TILE) {
        let (r, r1) = (
            s![i0..(i0 + ROW_TILE).min(za.nrows()), ..],
            s![i0..(i0 + ROW_TILE).min(za.nrows())],
        );
        let (za_t, ya_t) = (za.slice(r), ya.slice(r));
        let mut hm = ya_t.dot(&gamma).dot(&yb.t());
        hm.zip_mut_with(
            &gauss_tile(za_t, na.slice(r1), zb, nb.view(), inv_h),
            |a, &k| *a = *a * k,
        );
        let row_sums = hm.sum_axis(Axis(1));
        let mut g = hm.dot(&zb);
        Zip::from(g.rows_mut())
            .and(za_t.rows())
            .and(&row_sums)
            .for_each(|mut g, z, &rs| {
                g.zip_mut_with(&z, |gv, &zv| *gv = scale * (rs * zv - *gv));
            });
        ga.slice_mut(r).assign(&g);
        col_sums.zip_mut_with(&hm.sum_axis(Axis(0)), |a, &v| *a = *a + v);
        ht_za.zip_mut_with(&hm.t().dot(&za_t), |a, &v| *a = *a + v);
    }
    Zip::from(ht_za.rows_mut())
        .and(zb.rows())
        .and(&col_sums)
        .for_each(|mut g, z, &cs| {
            g.zip_mut_with(&z, |gv, &zv| *gv = scale * (cs * zv - *gv));
        });
    (ga, ht_za)
}
