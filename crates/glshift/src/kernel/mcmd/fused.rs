//! J_TU and J_DU from one pass over the kernel tiles (MUL's objective per iteration): the
//! K^{ss}, K^{tt}, K^{st} tiles of [`super`]'s estimators serve both terms.

use super::*;

/// Which rows J_DU runs on in [`j_tu_du`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DuRows {
    /// The source rows alone.
    Source,
    /// The source rows and the (confident, pseudo-labelled) target rows together, as
    /// [`j_du`] on the concatenation [Z_s; Z_t] — without copying them.
    Pooled,
}

/// What [`j_tu_du`] computes.
#[derive(Clone, Copy, Debug)]
pub struct MulObjectives<'a> {
    /// Target prior weighting J_TU (length c); None: no J_TU.
    pub prior: Option<&'a [f64]>,
    /// Rows of J_DU; None: no J_DU.
    pub du: Option<DuRows>,
    /// Active-class mask of J_DU, as in [`j_du`].
    pub du_active: Option<&'a [bool]>,
    pub estimator: McmdEstimator,
}

/// J_TU and J_DU with their gradients from one pass over the kernel tiles (the same
/// K^{ss}, K^{tt}, K^{st} serve both). `tu` and `du` are None when not requested; `du`'s
/// `grad_t` is zero with [`DuRows::Source`].
#[derive(Clone, Debug)]
pub struct TuDuGrad<T> {
    pub tu: Option<TuGrad<T>>,
    pub du: Option<TuGrad<T>>,
}

/// The objectives of [`j_tu_du`], the indices of its objectives (tu, du), and the label
/// matrices F of the source and target blocks that the kernel sums read.
struct TuDuPlan<'a, 'b, T> {
    objectives: Vec<Objective>,
    tu: Option<usize>,
    du: Option<usize>,
    fs: Features<'a, T>,
    ft: Features<'b, T>,
}

fn tu_du_objectives<'a, 'b, T: Real>(
    s: &Labelled<'a, T>,
    t: &Labelled<'b, T>,
    spec: &MulObjectives,
    p: &McmdParams,
    h: f64,
) -> Result<TuDuPlan<'a, 'b, T>> {
    spec.estimator.validate()?;
    // The target block is only checked when an objective reads it (J_DU on the source alone
    // may run with no confident target row). One label map serves the call: σ of the
    // data-dependent Gaussian label kernel comes from the label rows the call reads.
    let needs_t = spec.prior.is_some() || spec.du == Some(DuRows::Pooled);
    let map = if needs_t { prepare(s, t, p, h)? } else { prepare(s, s, p, h)? };
    let c = map.c();
    let (fs, ws) = embed(s, &map, p.eps)?;
    let ft = map.features(t.y);
    let mut objectives = Vec::new();
    let mut tu_idx = None;
    if let Some(prior) = spec.prior {
        check_prior(prior, c)?;
        let wt = map.coefficients(ft.gram.view(), p.eps, t.y.nrows())?;
        let [gss, gtt, gst] = tu_gammas(&ws, &wt, prior);
        tu_idx = Some(objectives.len());
        objectives.push(Objective { terms: vec![(0, 0, gss), (1, 1, gtt), (0, 1, gst)] });
    }
    let mut du_idx = None;
    if let Some(rows) = spec.du {
        let terms = match rows {
            DuRows::Source => {
                let act = du_active(&[s.y], c, spec.du_active)?;
                vec![(0, 0, du_gamma(&ws, &act))]
            }
            DuRows::Pooled => {
                let act = du_active(&[s.y, t.y], c, spec.du_active)?;
                let m_pooled = &fs.gram + &ft.gram;
                let wp = map.coefficients(m_pooled.view(), p.eps, s.y.nrows() + t.y.nrows())?;
                let g = du_gamma(&wp, &act);
                // ⟨Γ, S^{pp}⟩ = ⟨Γ, S^{ss}⟩ + ⟨Γ, S^{tt}⟩ + ⟨Γ + Γᵀ, S^{st}⟩.
                let cross = &g + &g.t();
                vec![(0, 0, g.clone()), (1, 1, g), (0, 1, cross)]
            }
        };
        du_idx = Some(objectives.len());
        objectives.push(Objective { terms });
    }
    Ok(TuDuPlan { objectives, tu: tu_idx, du: du_idx, fs, ft })
}

/// J_TU (as [`j_tu`]) and J_DU (as [`j_du`] on the rows `spec.du` names) with their gradients
/// wrt `s.z` and `t.z`, from one pass over the kernel tiles, exact or with random features
/// (`spec.estimator`). This is what one MUL iteration needs.
pub fn j_tu_du<T: Real>(
    s: &Labelled<T>,
    t: &Labelled<T>,
    spec: &MulObjectives,
    p: &McmdParams,
    h: f64,
) -> Result<TuDuGrad<T>> {
    let plan = tu_du_objectives(s, t, spec, p, h)?;
    let (tu_idx, du_idx) = (plan.tu, plan.du);
    if plan.objectives.is_empty() {
        return Ok(TuDuGrad { tu: None, du: None });
    }
    let mut out = run(
        &Request {
            domains: &[dom(&s.z, &plan.fs), dom(&t.z, &plan.ft)],
            s_blocks: Vec::new(),
            objectives: plan.objectives,
            h,
        },
        spec.estimator,
    );
    let tu = tu_idx.map(|o| two_domain_grad(&mut out, o));
    let du = du_idx.map(|o| two_domain_grad(&mut out, o));
    Ok(TuDuGrad { tu, du })
}

/// Floating-point operations [`j_tu_du`] performs on these inputs (the formula is in
/// `tiled::Plan::flops` for the exact path and [`rff::flops`] for random features).
pub fn j_tu_du_flops<T: Real>(
    s: &Labelled<T>,
    t: &Labelled<T>,
    spec: &MulObjectives,
    p: &McmdParams,
    h: f64,
) -> Result<f64> {
    let plan = tu_du_objectives(s, t, spec, p, h)?;
    let n_obj = plan.objectives.len();
    Ok(match spec.estimator {
        McmdEstimator::Exact => tiled::Plan::new(&Request {
            domains: &[dom(&s.z, &plan.fs), dom(&t.z, &plan.ft)],
            s_blocks: Vec::new(),
            objectives: plan.objectives,
            h,
        })
        .flops(),
        McmdEstimator::RandomFeatures(r) => {
            rff::flops(s.z.nrows() + t.z.nrows(), s.z.ncols(), s.y.ncols(), r, n_obj)
        }
    })
}

/// J_TU's objective on blocks (0, 0), (1, 1), (0, 1) of the domains (source, target) from their
/// labels alone (`ys` n_s×c, `yt` n_t×c, at least one row each; `prior` length c): the Γs
/// [`j_tu`] weighs the kernel sums with, for a pass whose rows are not on the host (the
/// device's kept Z, `crate::device::resident`). The label matrices the sums read are the
/// labels themselves only under the linear label kernel, the one such a pass accepts.
pub(crate) fn j_tu_objective(
    ys: ArrayView2<f32>,
    yt: ArrayView2<f32>,
    prior: &[f64],
    p: &McmdParams,
) -> Result<Objective> {
    p.validate()?;
    let map = LabelMap::new(&p.label_kernel, &[ys, yt], ys.ncols());
    check_prior(prior, map.c())?;
    let ws = map.coefficients(map.features(ys).gram.view(), p.eps, ys.nrows())?;
    let wt = map.coefficients(map.features(yt).gram.view(), p.eps, yt.nrows())?;
    let [gss, gtt, gst] = tu_gammas(&ws, &wt, prior);
    Ok(Objective { terms: vec![(0, 0, gss), (1, 1, gtt), (0, 1, gst)] })
}

/// J_DU's objective on block (0, 0) of one domain from its labels alone (`y` n×c), with the
/// active-class mask of [`j_du`]: as [`j_tu_objective`] for J_DU.
pub(crate) fn j_du_objective(
    y: ArrayView2<f32>,
    p: &McmdParams,
    active: Option<&[bool]>,
) -> Result<Objective> {
    p.validate()?;
    let map = LabelMap::new(&p.label_kernel, &[y, y], y.ncols());
    let act = du_active(&[y], map.c(), active)?;
    let w = map.coefficients(map.features(y).gram.view(), p.eps, y.nrows())?;
    Ok(Objective { terms: vec![(0, 0, du_gamma(&w, &act))] })
}
