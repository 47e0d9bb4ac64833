//! MCMD², J_DU and J_TU in c×c form: G^{ab} = W_aᵀ S^{ab} W_b with ⟨μ̂ᵃ_k, μ̂ᵇ_l⟩ = G^{ab}_{kl}.
//! The kernel sums S come from the fused tiled pass ([`super::tiled`]) or, on request, from
//! random features ([`super::rff`]). MUL's fused J_TU + J_DU pass is in [`fused`].

mod fused;
pub(crate) use fused::{j_du_objective, j_tu_objective};
pub use fused::{j_tu_du, j_tu_du_flops, DuRows, MulObjectives, TuDuGrad};

use super::label_map::{Features, LabelMap};
use super::tiled::{self, Domain, Objective, Request};
use super::{check_h, check_labelled, rff};
use super::{shape_err, Labelled, McmdEstimator, McmdParams, TermGrad, TuGrad};
use crate::{Error, Real, Result};
use ndarray::{Array1, Array2, ArrayView2};

/// One domain's label matrix F as the kernel sums read it and its coefficients W
/// (bilinear map: F = Y, W = (εnI + BN)⁻¹B; see [`super::label_map`]).
fn embed<'a, T: Real>(
    x: &Labelled<'a, T>,
    map: &LabelMap,
    eps: f64,
) -> Result<(Features<'a, T>, Array2<f64>)> {
    let f = map.features(x.y);
    let w = map.coefficients(f.gram.view(), eps, x.y.nrows())?;
    Ok((f, w))
}

/// The tiled engine's view of a labelled block read as it is (F = Y).
fn ldom<'b, T>(x: &'b Labelled<'_, T>) -> Domain<'b, T> {
    Domain { z: x.z.view(), y: x.y.view() }
}

/// The tiled engine's view of a domain: its features Z and its label matrix F.
fn dom<'b, T>(z: &'b ArrayView2<'_, T>, f: &'b Features<'_, T>) -> Domain<'b, T> {
    Domain { z: z.view(), y: f.y.view() }
}

fn run<T: Real>(req: &Request<T>, est: McmdEstimator) -> tiled::Output<T> {
    match est {
        McmdEstimator::Exact => tiled::run(req),
        McmdEstimator::RandomFeatures(r) => {
            rff::run(req, rff::RandomFeatures { r, seed: rff::DEFAULT_SEED })
        }
    }
}

/// S^{ab} of the requested blocks of `domains`, exact.
fn kernel_sums<T: Real>(
    domains: &[Domain<T>],
    blocks: &[(usize, usize)],
    h: f64,
) -> Vec<Array2<f64>> {
    let out =
        tiled::run(&Request { domains, s_blocks: blocks.to_vec(), objectives: Vec::new(), h });
    blocks.iter().map(|&(a, b)| out.s_block(a, b).clone()).collect()
}

fn same_view<T>(a: &ArrayView2<T>, b: &ArrayView2<T>) -> bool {
    a.as_ptr() == b.as_ptr() && a.dim() == b.dim() && a.strides() == b.strides()
}

/// `Wᵀ S W` of one block against itself (the one-block case of [`embedding_gram`] and
/// [`mcmd2_matrix`]): S the c′×c′ kernel sum of the block's features, W its coefficients.
fn one_block_gram<T: Real>(
    a: &Labelled<T>,
    fa: &Features<T>,
    wa: &Array2<f64>,
    h: f64,
) -> Array2<f64> {
    let s = kernel_sums(&[dom(&a.z, fa)], &[(0, 0)], h).remove(0);
    wa.t().dot(&s).dot(wa)
}

/// True when both blocks are views of the same memory: G^{aa} = G^{bb} = G^{ab}, so one
/// kernel sum suffices.
pub(super) fn same_block<T>(a: &Labelled<T>, b: &Labelled<T>) -> bool {
    same_view(&a.z, &b.z) && same_view(&a.y, &b.y)
}

/// Validates two blocks that must share d and c, and the parameters; returns the label map
/// resolved on both blocks' labels (one label kernel for both embeddings).
fn prepare<T: Real>(a: &Labelled<T>, b: &Labelled<T>, p: &McmdParams, h: f64) -> Result<LabelMap> {
    p.validate()?;
    check_h(h)?;
    check_labelled(a, "a", None, None)?;
    check_labelled(b, "b", Some(a.z.ncols()), Some(a.y.ncols()))?;
    Ok(LabelMap::new(&p.label_kernel, &[a.y, b.y], a.y.ncols()))
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
    let map = prepare(a, b, p, h)?;
    let (fa, wa) = embed(a, &map, p.eps)?;
    if same_block(a, b) {
        return Ok(one_block_gram(a, &fa, &wa, h));
    }
    let (fb, wb) = embed(b, &map, p.eps)?;
    let s = kernel_sums(&[dom(&a.z, &fa), dom(&b.z, &fb)], &[(0, 1)], h).remove(0);
    Ok(wa.t().dot(&s).dot(&wb))
}

/// c×c matrix D with D_kl = MCMD²(Pᵃ_{Z|k}, Pᵇ_{Z|l}) = G^{aa}_{kk} + G^{bb}_{ll} − 2G^{ab}_{kl}
/// (paper eq. MAL-Mahalanobis-distance-Hilbert, estimated as
/// L^{aT}_k M^{aa} L^a_k + L^{bT}_l M^{bb} L^b_l − 2 L^{aT}_k M^{ab} L^b_l with
/// M^{ab} = L̃_a⁻¹ K^{ab} L̃_b⁻¹). `a.z` n_a×d, `a.y` n_a×c, `b.z` n_b×d, `b.y` n_b×c.
/// For one domain pass the same block twice (then D is symmetric with zero diagonal).
/// The three kernel sums come from one tiled pass.
pub fn mcmd2_matrix<T: Real>(
    a: &Labelled<T>,
    b: &Labelled<T>,
    p: &McmdParams,
    h: f64,
) -> Result<Array2<f64>> {
    let map = prepare(a, b, p, h)?;
    let (fa, wa) = embed(a, &map, p.eps)?;
    let (gaa, gbb, gab) = if same_block(a, b) {
        let g = one_block_gram(a, &fa, &wa, h);
        (g.clone(), g.clone(), g)
    } else {
        let (fb, wb) = embed(b, &map, p.eps)?;
        let s = kernel_sums(&[dom(&a.z, &fa), dom(&b.z, &fb)], &[(0, 0), (1, 1), (0, 1)], h);
        (wa.t().dot(&s[0]).dot(&wa), wb.t().dot(&s[1]).dot(&wb), wa.t().dot(&s[2]).dot(&wb))
    };
    let c = map.c();
    Ok(Array2::from_shape_fn((c, c), |(k, l)| gaa[[k, k]] + gbb[[l, l]] - 2.0 * gab[[k, l]]))
}

/// Active classes of J_DU (mask ∧ label mass > 0) as 0/1 weights, after checking the mask.
fn du_active<T: Real>(ys: &[ArrayView2<T>], c: usize, active: Option<&[bool]>) -> Result<Vec<f64>> {
    if let Some(m) = active.filter(|m| m.len() != c) {
        return Err(shape_err("j_du active-class mask length (classes)", c, m.len()));
    }
    let mut mass = vec![T::zero(); c];
    for y in ys {
        for (m, v) in mass.iter_mut().zip(y.sum_axis(ndarray::Axis(0))) {
            *m = *m + v;
        }
    }
    Ok((0..c)
        .map(|k| f64::from(u8::from(active.is_none_or(|m| m[k]) && mass[k] != T::zero())))
        .collect())
}

/// Γ = W (∂J_DU/∂G) Wᵀ with ∂J_DU/∂G = 2|A|·diag(1_A) − 2·1_A1_Aᵀ.
fn du_gamma(w: &Array2<f64>, act: &[f64]) -> Array2<f64> {
    let c = act.len();
    let n_act: f64 = act.iter().sum();
    let dg = Array2::from_shape_fn((c, c), |(k, l)| {
        let diag = if k == l { 2.0 * n_act * act[k] } else { 0.0 };
        diag - 2.0 * act[k] * act[l]
    });
    w.dot(&dg).dot(&w.t())
}

/// Γ^{ss}, Γ^{tt}, Γ^{st} of J_TU: ∂J/∂G^{ss} = ∂J/∂G^{tt} = diag(prior), ∂J/∂G^{st} =
/// −2 diag(prior), Γ = W_a (∂J/∂G) W_bᵀ.
fn tu_gammas(ws: &Array2<f64>, wt: &Array2<f64>, prior: &[f64]) -> [Array2<f64>; 3] {
    let dp = Array2::from_diag(&Array1::from(prior.to_vec()));
    [ws.dot(&dp).dot(&ws.t()), wt.dot(&dp).dot(&wt.t()), ws.dot(&dp).dot(&wt.t()) * -2.0]
}

fn check_prior(prior: &[f64], c: usize) -> Result<()> {
    if prior.len() != c {
        return Err(shape_err("j_tu prior length (classes)", c, prior.len()));
    }
    if let Some(&v) = prior.iter().find(|v| !(v.is_finite() && **v >= 0.0)) {
        return Err(Error::param("prior", v, "entries must be finite and >= 0"));
    }
    Ok(())
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
/// arguments of K(z, z) (labels, W and h constant). Exact; see [`j_du_with`].
pub fn j_du<T: Real>(
    a: &Labelled<T>,
    p: &McmdParams,
    h: f64,
    active: Option<&[bool]>,
) -> Result<TermGrad<T>> {
    j_du_with(a, p, h, active, McmdEstimator::Exact)
}

/// [`j_du`] with the kernel sums computed by `est` (exact or random features).
pub fn j_du_with<T: Real>(
    a: &Labelled<T>,
    p: &McmdParams,
    h: f64,
    active: Option<&[bool]>,
    est: McmdEstimator,
) -> Result<TermGrad<T>> {
    est.validate()?;
    let map = prepare(a, a, p, h)?;
    let act = du_active(&[a.y], map.c(), active)?;
    let (f, w) = embed(a, &map, p.eps)?;
    Ok(j_du_from_coefficients(&Labelled { z: a.z, y: f.y.view() }, &w, &act, h, est))
}

/// J_DU and its gradient from the coefficients `w` (c×c) of the class embeddings Φ Y W e_k and
/// the 0/1 active mask `act`; shared by the CME form above and the class-wise MMD form
/// (`super::classwise`, W = diag(1/n_k)). Inputs are checked by the callers.
pub(super) fn j_du_from_coefficients<T: Real>(
    a: &Labelled<T>,
    w: &Array2<f64>,
    act: &[f64],
    h: f64,
    est: McmdEstimator,
) -> TermGrad<T> {
    let mut out = run(
        &Request {
            domains: &[ldom(a)],
            s_blocks: Vec::new(),
            objectives: vec![Objective { terms: vec![(0, 0, du_gamma(w, act))] }],
            h,
        },
        est,
    );
    TermGrad { value: out.values[0], grad: out.grads[0].remove(0) }
}

/// J_TU = Σ_k prior_k (G^{ss}_kk + G^{tt}_kk − 2G^{st}_kk) and its gradients from each domain's
/// embedding coefficients `ws`, `wt` (see [`j_du_from_coefficients`]); used by the class-wise
/// MMD form. Inputs are checked by the callers.
pub(super) fn j_tu_from_coefficients<T: Real>(
    s: &Labelled<T>,
    t: &Labelled<T>,
    ws: &Array2<f64>,
    wt: &Array2<f64>,
    prior: &[f64],
    h: f64,
    est: McmdEstimator,
) -> TuGrad<T> {
    let [gss, gtt, gst] = tu_gammas(ws, wt, prior);
    let mut out = run(
        &Request {
            domains: &[ldom(s), ldom(t)],
            s_blocks: Vec::new(),
            objectives: vec![Objective { terms: vec![(0, 0, gss), (1, 1, gtt), (0, 1, gst)] }],
            h,
        },
        est,
    );
    two_domain_grad(&mut out, 0)
}

/// Value of objective `o` of a two-domain (source, target) request and its gradients, taken
/// out of `out`.
fn two_domain_grad<T: Real>(out: &mut tiled::Output<T>, o: usize) -> TuGrad<T> {
    let grad_t = out.grads[o].pop().expect("target gradient");
    let grad_s = out.grads[o].pop().expect("source gradient");
    TuGrad { value: out.values[o], grad_s, grad_t }
}

/// Transfer uncertainty J_TU = Σ_k prior_k (G^{ss}_{kk} + G^{tt}_{kk} − 2G^{st}_{kk})
/// = Σ_k prior_k MCMD²(Pˢ_{Z|k}, Pᵗ_{Z|k}) (paper eq. Conditional-Matching-esitimation, the
/// quadratic form of [L^s_k; −L^t_k] in the block matrix [[M^{ss}, M^{st}]; [M^{ts}, M^{tt}]]),
/// and its gradients wrt `s.z` (n_s×d) and `t.z` (n_t×d). `prior` (length c, finite, ≥ 0)
/// is the estimated target prior; a zero weight removes a class absent from the target.
/// Exact; see [`j_tu_with`].
pub fn j_tu<T: Real>(
    s: &Labelled<T>,
    t: &Labelled<T>,
    prior: &[f64],
    p: &McmdParams,
    h: f64,
) -> Result<TuGrad<T>> {
    j_tu_with(s, t, prior, p, h, McmdEstimator::Exact)
}

/// [`j_tu`] with the kernel sums computed by `est` (exact or random features).
pub fn j_tu_with<T: Real>(
    s: &Labelled<T>,
    t: &Labelled<T>,
    prior: &[f64],
    p: &McmdParams,
    h: f64,
    est: McmdEstimator,
) -> Result<TuGrad<T>> {
    let out = j_tu_du(
        s,
        t,
        &MulObjectives { prior: Some(prior), du: None, du_active: None, estimator: est },
        p,
        h,
    )?;
    Ok(out.tu.expect("J_TU requested"))
}
