//! MCMD², J_DU and J_TU in c×c form: G^{ab} = W_aᵀ S^{ab} W_b with ⟨μ̂ᵃ_k, μ̂ᵇ_l⟩ = G^{ab}_{kl}.

use super::{check_h, check_labelled, cme_coefficients, kernel_sum, kernel_sum_backward};
use super::{shape_err, Labelled, McmdParams, TermGrad, TuGrad};
use crate::{Error, Real, Result};
use ndarray::{Array2, ArrayView2};

/// W = (εnI + BN)⁻¹B of one domain, N = YᵀY accumulated in f64.
fn coefficients<T: Real>(x: &Labelled<T>, b: &Array2<f64>, eps: f64) -> Result<Array2<f64>> {
    let y = x.y.mapv(|v| v.to_f64_());
    cme_coefficients(y.t().dot(&y).view(), b.view(), eps, y.nrows())
}

/// G^{ab} = W_aᵀ S^{ab} W_b.
fn gram<T: Real>(
    a: &Labelled<T>,
    wa: &Array2<f64>,
    b: &Labelled<T>,
    wb: &Array2<f64>,
    h: f64,
) -> Array2<f64> {
    wa.t().dot(&kernel_sum(a.z, a.y, b.z, b.y, h)).dot(wb)
}

fn same_view<T>(a: &ArrayView2<T>, b: &ArrayView2<T>) -> bool {
    a.as_ptr() == b.as_ptr() && a.dim() == b.dim() && a.strides() == b.strides()
}

/// True when both blocks are views of the same memory: G^{aa} = G^{bb} = G^{ab}, so one
/// kernel sum suffices.
fn same_block<T>(a: &Labelled<T>, b: &Labelled<T>) -> bool {
    same_view(&a.z, &b.z) && same_view(&a.y, &b.y)
}

/// Validates two blocks that must share d and c, and the parameters; returns B.
fn prepare<T: Real>(
    a: &Labelled<T>,
    b: &Labelled<T>,
    p: &McmdParams,
    h: f64,
) -> Result<Array2<f64>> {
    p.validate()?;
    check_h(h)?;
    check_labelled(a, "a", None, None)?;
    check_labelled(b, "b", Some(a.z.ncols()), Some(a.y.ncols()))?;
    Ok(p.label_kernel.basis_gram(a.y.ncols()))
}

/// G^{ab} = W_aᵀ S^{ab} W_b (c×c): G^{ab}_{kl} = ⟨μ̂ᵃ_k, μ̂ᵇ_l⟩, the inner products of the
/// empirical class-conditional mean embeddings, i.e. L^{aT}_k M^{ab} L^b_l in the paper's
/// notation. G^{aa} is positive semi-definite. Same shapes and checks as [`mcmd2_matrix`].
pub fn embedding_gram<T: Real>(
    a: &Labelled<T>,
    b: &Labelled<T>,
    p: &McmdParams,
    h: f64,
) -> Result<Array2<f64>> {
    let bm = prepare(a, b, p, h)?;
    let wa = coefficients(a, &bm, p.eps)?;
    let wb = if same_block(a, b) {
        wa.clone()
    } else {
        coefficients(b, &bm, p.eps)?
    };
    Ok(gram(a, &wa, b, &wb, h))
}

/// c×c matrix D with D_kl = MCMD²(Pᵃ_{Z|k}, Pᵇ_{Z|l}) = G^{aa}_{kk} + G^{bb}_{ll} − 2G^{ab}_{kl}
/// (paper eq. MAL-Mahalanobis-distance-Hilbert, estimated as
/// L^{aT}_k M^{aa} L^a_k + L^{bT}_l M^{bb} L^b_l − 2 L^{aT}_k M^{ab} L^b_l with
/// M^{ab} = L̃_a⁻¹ K^{ab} L̃_b⁻¹). `a.z` n_a×d, `a.y` n_a×c, `b.z` n_b×d, `b.y` n_b×c.
/// For one domain pass the same block twice (then D is symmetric with zero diagonal).
pub fn mcmd2_matrix<T: Real>(
    a: &Labelled<T>,
    b: &Labelled<T>,
    p: &McmdParams,
    h: f64,
) -> Result<Array2<f64>> {
    let bm = prepare(a, b, p, h)?;
    let wa = coefficients(a, &bm, p.eps)?;
    let gaa = gram(a, &wa, a, &wa, h);
    let (gbb, gab) = if same_block(a, b) {
        (gaa.clone(), gaa.clone())
    } else {
        let wb = coefficients(b, &bm, p.eps)?;
        (gram(b, &wb, b, &wb, h), gram(a, &wa, b, &wb, h))
    };
    let c = bm.nrows();
    Ok(Array2::from_shape_fn((c, c), |(k, l)| {
        gaa[[k, k]] + gbb[[l, l]] - 2.0 * gab[[k, l]]
    }))
}

/// Decision uncertainty J_DU = Σ_{k≠l} MCMD²(P_{Z|k}, P_{Z|l}) on one (pooled) domain
/// (paper eq. MAL-Mahalanobis-distance-Euclid, with (i, j) running over pairs of classes),
/// and its gradient wrt `a.z` (n×d). Since the k = l terms vanish,
/// J_DU = Σ_{k,l∈A} (G_kk + G_ll − 2G_kl) = 2|A|·Σ_{k∈A} G_kk − 2·1_Aᵀ G 1_A,
/// which is 2c·tr(G) − 2·1ᵀG1 when A holds all c classes.
///
/// The active set A is `active` (length c; `None` = all classes) minus every class whose
/// label column sums to zero: a class with no rows has no conditional distribution, and its
/// "embedding" Φ Y W e_k would only be an artefact of ε and of B's off-diagonal terms.
/// The gradient uses ∂J/∂G = 2|A|·diag(1_A) − 2·1_A1_Aᵀ, Γ = W (∂J/∂G) Wᵀ, and both
/// arguments of K(z, z) (labels, W and h constant).
pub fn j_du<T: Real>(
    a: &Labelled<T>,
    p: &McmdParams,
    h: f64,
    active: Option<&[bool]>,
) -> Result<TermGrad<T>> {
    let bm = prepare(a, a, p, h)?;
    let c = bm.nrows();
    if let Some(m) = active.filter(|m| m.len() != c) {
        return Err(shape_err(
            "j_du active-class mask length (classes)",
            c,
            m.len(),
        ));
    }
    let mass = a.y.sum_axis(ndarray::Axis(0));
    let act: Vec<f64> = (0..c)
        .map(|k| {
            f64::from(u8::from(
                active.is_none_or(|m| m[k]) && mass[k] != T::zero(),
            ))
        })
        .collect();
    let w = coefficients(a, &bm, p.eps)?;
    Ok(j_du_with(a, &w, h, &act))
}

/// J_DU from the coefficients `w` (c×c) of the class embeddings Φ Y W e_k and the 0/1 active
/// mask `act`; shared by the CME form and the class-wise MMD form (`super::classwise`).
pub(super) fn j_du_with<T: Real>(a: &Labelled<T>, w: &Array2<f64>, h: f64, act: &[f64]) -> TermGrad<T> {
    let c = w.nrows();
    let n_act: f64 = act.iter().sum();
    let g = gram(a, w, a, w, h);
    let mut value = 0.0;
    let mut dg = Array2::<f64>::zeros((c, c));
    for k in 0..c {
        value += 2.0 * n_act * act[k] * g[[k, k]];
        dg[[k, k]] += 2.0 * n_act * act[k];
        for l in 0..c {
            value -= 2.0 * act[k] * act[l] * g[[k, l]];
            dg[[k, l]] -= 2.0 * act[k] * act[l];
        }
    }
    let gamma = w.dot(&dg).dot(&w.t());
    let (g1, g2) = kernel_sum_backward(a.z, a.y, a.z, a.y, h, gamma.view());
    TermGrad {
        value,
        grad: g1 + g2,
    }
}

/// Transfer uncertainty J_TU = Σ_k prior_k (G^{ss}_{kk} + G^{tt}_{kk} − 2G^{st}_{kk})
/// = Σ_k prior_k MCMD²(Pˢ_{Z|k}, Pᵗ_{Z|k}) (paper eq. Conditional-Matching-esitimation, the
/// quadratic form of [L^s_k; −L^t_k] in the block matrix [[M^{ss}, M^{st}]; [M^{ts}, M^{tt}]]),
/// and its gradients wrt `s.z` (n_s×d) and `t.z` (n_t×d). `prior` (length c, finite, ≥ 0)
/// is the estimated target prior; a zero weight removes a class absent from the target.
pub fn j_tu<T: Real>(
    s: &Labelled<T>,
    t: &Labelled<T>,
    prior: &[f64],
    p: &McmdParams,
    h: f64,
) -> Result<TuGrad<T>> {
    let bm = prepare(s, t, p, h)?;
    let c = bm.nrows();
    if prior.len() != c {
        return Err(shape_err("j_tu prior length (classes)", c, prior.len()));
    }
    if let Some(&v) = prior.iter().find(|v| !(v.is_finite() && **v >= 0.0)) {
        return Err(Error::param("prior", v, "entries must be finite and >= 0"));
    }
    let (ws, wt) = (coefficients(s, &bm, p.eps)?, coefficients(t, &bm, p.eps)?);
    Ok(j_tu_with(s, t, &ws, &wt, prior, h))
}

/// J_TU from the coefficients `ws`, `wt` of each domain's class embeddings (see [`j_du_with`]).
pub(super) fn j_tu_with<T: Real>(
    s: &Labelled<T>,
    t: &Labelled<T>,
    ws: &Array2<f64>,
    wt: &Array2<f64>,
    prior: &[f64],
    h: f64,
) -> TuGrad<T> {
    let c = ws.nrows();
    let (gss, gtt, gst) = (
        gram(s, ws, s, ws, h),
        gram(t, wt, t, wt, h),
        gram(s, ws, t, wt, h),
    );
    let value = (0..c)
        .map(|k| prior[k] * (gss[[k, k]] + gtt[[k, k]] - 2.0 * gst[[k, k]]))
        .sum();
    // ∂J/∂G^{ss} = ∂J/∂G^{tt} = diag(prior), ∂J/∂G^{st} = −2 diag(prior); Γ = W_a (∂J/∂G) W_bᵀ.
    let dp = Array2::from_diag(&ndarray::Array1::from(prior.to_vec()));
    let (ss1, ss2) = kernel_sum_backward(s.z, s.y, s.z, s.y, h, ws.dot(&dp).dot(&ws.t()).view());
    let (tt1, tt2) = kernel_sum_backward(t.z, t.y, t.z, t.y, h, wt.dot(&dp).dot(&wt.t()).view());
    let (st_s, st_t) = kernel_sum_backward(
        s.z,
        s.y,
        t.z,
        t.y,
        h,
        (ws.dot(&dp).dot(&wt.t()) * -2.0).view(),
    );
    TuGrad {
        value,
        grad_s: ss1 + ss2 + st_s,
        grad_t: tt1 + tt2 + st_t,
    }
}
