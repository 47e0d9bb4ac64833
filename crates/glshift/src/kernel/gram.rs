//! The public two-block kernel sums S = Y_aᵀ K^{ab} Y_b and their backward pass, on the fused
//! tiled engine ([`super::tiled`]): K is never stored, memory is O((n_a + n_b)(d + c)).

use super::mcmd::same_block;
use super::tiled::{self, Domain, Objective, Request};
use super::Labelled;
use crate::Real;
use ndarray::{Array2, ArrayView2};

fn check_shapes<T>(
    za: &ArrayView2<T>,
    ya: &ArrayView2<T>,
    zb: &ArrayView2<T>,
    yb: &ArrayView2<T>,
    h: f64,
) {
    assert_eq!(za.nrows(), ya.nrows(), "kernel_sum: za and ya row counts differ");
    assert_eq!(zb.nrows(), yb.nrows(), "kernel_sum: zb and yb row counts differ");
    assert_eq!(za.ncols(), zb.ncols(), "kernel_sum: za and zb feature dims differ");
    assert_eq!(ya.ncols(), yb.ncols(), "kernel_sum: ya and yb class counts differ");
    assert!(h.is_finite() && h > 0.0, "kernel_sum: bandwidth h = {h} must be finite and > 0");
}

/// S = Y_aᵀ K^{ab} Y_b (c×c, f64), K_ij = exp(−‖za_i − zb_j‖²/h); `za` n_a×d, `ya` n_a×c,
/// `zb` n_b×d, `yb` n_b×c (one-hot or soft). S_kl = Σ_ij ya_ik K_ij yb_jl is the unnormalised
/// inner product of class embeddings; G^{ab} = W_aᵀ S W_b gives ⟨μ̂ᵃ_k, μ̂ᵇ_l⟩ (`mcmd-math.md`).
/// Tile sums are added in f64. When a and b are views of the same memory only the tiles on and
/// above the diagonal are computed.
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
    let (a, b) = (Labelled::new(za, ya), Labelled::new(zb, yb));
    let (domains, block) = if same_block(&a, &b) {
        (vec![Domain { z: za, y: ya }], (0, 0))
    } else {
        (vec![Domain { z: za, y: ya }, Domain { z: zb, y: yb }], (0, 1))
    };
    let out = tiled::run(&Request {
        domains: &domains,
        s_blocks: vec![block],
        objectives: Vec::new(),
        h,
    });
    out.s_block(block.0, block.1).clone()
}

/// Backward of [`kernel_sum`]: given Γ = ∂ℓ/∂S (c×c), returns (∂ℓ/∂Z_a, ∂ℓ/∂Z_b), shaped
/// like `za` and `zb`, with h constant. From `mcmd-math.md`, with H = (Y_a Γ Y_bᵀ) ∘ K:
/// ∂ℓ/∂Z_a = −(2/h)(diag(H1) Z_a − H Z_b), ∂ℓ/∂Z_b = −(2/h)(diag(Hᵀ1) Z_b − Hᵀ Z_a).
/// The two arguments are treated as independent even when they are the same rows; then the
/// caller adds both parts.
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
    assert_eq!(gamma.dim(), (c, c), "kernel_sum_backward: gamma must be c×c");
    let mut out = tiled::run(&Request {
        domains: &[Domain { z: za, y: ya }, Domain { z: zb, y: yb }],
        s_blocks: Vec::new(),
        objectives: vec![Objective { terms: vec![(0, 1, gamma.to_owned())] }],
        h,
    });
    let gb = out.grads[0].pop().expect("two domains");
    let ga = out.grads[0].pop().expect("two domains");
    (ga, gb)
}
