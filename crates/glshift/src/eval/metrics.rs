//! Analysis metrics on the learned representation Z (paper, section "Model analysis"). They read
//! target labels and so are evaluation only: nothing in training calls them.
//!
//! All of them are computed on Z rescaled by one scalar shared by the source and target rows,
//! chosen so that the root-mean-square row norm over both domains is 1 ([`common_scale`]). The
//! paper scales "the ℓ2-norms of representations to be the same for different models"; a single
//! scalar keeps the geometry (J_b/J_w is scale-free) while making J_b, J_w and the distance
//! matrices comparable between runs and methods.

use ndarray::{Array1, Array2, ArrayView2, Axis};
use serde::{Deserialize, Serialize};

use crate::kernel::{mcmd2_matrix, scaled_bandwidth, Labelled, McmdParams};
use crate::nn::one_hot;
use crate::{Error, Result};

/// LDA-like separability of one domain's representation (paper, "Quantitative evaluation").
///
/// With z̄ the mean of all n rows and z̄_k the mean of the rows of class k:
/// - `j_b` (inter-class separability) = (1/c') Σ_k ‖z̄_k − z̄‖², over the c' classes that have
///   at least one row;
/// - `j_w` (intra-class scatter) = (1/n) Σ_i ‖z_i − z̄_{y_i}‖²;
/// - `ratio` (discriminability) = J_b / J_w (+∞ when J_w = 0 and J_b > 0).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Separability {
    pub j_b: f64,
    pub j_w: f64,
    pub ratio: f64,
    /// c': classes with at least one row.
    pub classes_present: usize,
}

/// Everything the run report needs about Z, computed once after training.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EmbeddingMetrics {
    /// The factor Z was multiplied by before every metric below (see [`common_scale`]).
    pub scale: f64,
    pub source: Separability,
    pub target: Separability,
    /// D^st_kl = ‖z̄ˢ_k − z̄ᵗ_l‖² between class prototypes (means); `None` where class k has no
    /// source row or class l no target row.
    pub d_st: Vec<Vec<Option<f64>>>,
    /// D^tt_kl = ‖z̄ᵗ_k − z̄ᵗ_l‖²; `None` for classes without target rows.
    pub d_tt: Vec<Vec<Option<f64>>>,
    /// Mean of the defined diagonal entries of D^st (same class across domains: small is aligned).
    pub d_st_diagonal_mean: f64,
    /// Mean of the defined off-diagonal entries of D^st.
    pub d_st_off_diagonal_mean: f64,
    /// MCMD²(Pˢ_{Z|k}, Pᵗ_{Z|k}) per class with the true target labels (`None` for a class
    /// absent from either domain), estimated as in training (`kernel::mcmd2_matrix`).
    pub mcmd2_per_class: Vec<Option<f64>>,
    /// Gaussian bandwidth of that estimate: the mean pairwise squared distance of the rescaled Z
    /// (`None`, and no MCMD, when every row of Z is the same point).
    pub mcmd_bandwidth: Option<f64>,
    /// Rows per domain of the seeded sample `mcmd2_per_class` was computed on, when a domain
    /// had more than [`MCMD_METRIC_ROWS`] (its kernel sums are O(n²)); absent: every row.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mcmd_sample_rows: Option<usize>,
}

/// The scalar s with mean_i ‖s·z_i‖² = 1 over the rows of both blocks (1 when all rows are 0).
pub fn common_scale(zs: ArrayView2<f32>, zt: ArrayView2<f32>) -> f64 {
    let n = zs.nrows() + zt.nrows();
    let ss: f64 = zs.iter().chain(zt.iter()).map(|&v| f64::from(v) * f64::from(v)).sum();
    if n == 0 || ss <= 0.0 {
        1.0
    } else {
        (n as f64 / ss).sqrt()
    }
}

/// The rows of a representation (n × d, f32) multiplied by one scalar, read in f64 a row at a
/// time. Why not a scaled f64 copy: at 1 000 000 + 300 000 rows × 256 the two copies were
/// 2.6 GB, the peak of the whole fit (docs/performance.md, "The metrics' copy of Z").
#[derive(Clone, Copy, Debug)]
pub struct ScaledRows<'a> {
    z: ArrayView2<'a, f32>,
    scale: f64,
}

impl<'a> ScaledRows<'a> {
    /// The rows of `z` times `scale` (each value `f64::from(v) * scale`).
    pub fn new(z: ArrayView2<'a, f32>, scale: f64) -> Self {
        ScaledRows { z, scale }
    }

    pub fn nrows(&self) -> usize {
        self.z.nrows()
    }

    /// Calls `f(i, row_i)` for every row in order (one row buffer of length d).
    fn for_each(&self, mut f: impl FnMut(usize, &[f64])) {
        let mut buf = vec![0.0; self.z.ncols()];
        for (i, row) in self.z.rows().into_iter().enumerate() {
            buf.iter_mut().zip(row).for_each(|(b, &v)| *b = f64::from(v) * self.scale);
            f(i, &buf);
        }
    }

    /// The rows `rows` (in the given order) as an owned `rows.len() × d` array.
    fn select(&self, rows: &[usize]) -> Array2<f64> {
        self.z.select(Axis(0), rows).mapv(|v| f64::from(v) * self.scale)
    }
}

fn check_labels(z: &ScaledRows, y: &[usize], c: usize, what: &str) -> Result<()> {
    if z.nrows() != y.len() {
        return Err(Error::Shape {
            what: format!("{what} labels vs rows of Z"),
            expected: z.nrows().to_string(),
            found: y.len().to_string(),
        });
    }
    if z.nrows() == 0 {
        return Err(Error::bad_data(what, "no rows"));
    }
    if let Some(&bad) = y.iter().find(|&&k| k >= c) {
        return Err(Error::bad_data(what, format!("label {bad} out of range 0..{c}")));
    }
    Ok(())
}

/// Class means z̄_k (`None` for a class without rows); `y` has one label `< c` per row.
pub fn class_means(z: ScaledRows, y: &[usize], c: usize) -> Vec<Option<Array1<f64>>> {
    let mut sums = vec![Array1::<f64>::zeros(z.z.ncols()); c];
    let mut counts = vec![0usize; c];
    z.for_each(|i, row| {
        sums[y[i]].iter_mut().zip(row).for_each(|(s, v)| *s += v);
        counts[y[i]] += 1;
    });
    sums.into_iter().zip(counts).map(|(s, m)| (m > 0).then(|| s / m as f64)).collect()
}

/// J_b, J_w and J_b/J_w of one domain (see [`Separability`]).
pub fn separability(z: ScaledRows, y: &[usize], c: usize) -> Result<Separability> {
    check_labels(&z, y, c, "separability")?;
    Ok(separability_around(z, y, &class_means(z, y, c)))
}

/// [`separability`] of rows whose labels are checked, around their [`class_means`] `means`.
fn separability_around(z: ScaledRows, y: &[usize], means: &[Option<Array1<f64>>]) -> Separability {
    let n = z.nrows() as f64;
    let mut sum = Array1::<f64>::zeros(z.z.ncols());
    z.for_each(|_, row| sum.iter_mut().zip(row).for_each(|(s, v)| *s += v));
    let mean = sum / n;
    let present: Vec<&Array1<f64>> = means.iter().flatten().collect();
    let j_b =
        present.iter().map(|m| sq_dist(m.as_slice().expect("contiguous"), &mean)).sum::<f64>()
            / present.len() as f64;
    // Non-negative terms from 0: the sum `Iterator::sum` gives, without a vector of n terms.
    let mut within = 0.0;
    z.for_each(|i, row| within += sq_dist(row, means[y[i]].as_ref().expect("class has a row")));
    let j_w = within / n;
    let ratio = if j_w > 0.0 {
        j_b / j_w
    } else if j_b > 0.0 {
        f64::INFINITY
    } else {
        0.0
    };
    Separability { j_b, j_w, ratio, classes_present: present.len() }
}

fn sq_dist(a: &[f64], b: &Array1<f64>) -> f64 {
    a.iter().zip(b).map(|(x, y)| (x - y) * (x - y)).sum()
}

/// D_kl = ‖a_k − b_l‖² between two lists of class prototypes (`None` where either is missing).
pub fn prototype_distances(
    a: &[Option<Array1<f64>>],
    b: &[Option<Array1<f64>>],
) -> Vec<Vec<Option<f64>>> {
    a.iter()
        .map(|ak| {
            b.iter()
                .map(|bl| Some(sq_dist(ak.as_ref()?.as_slice().expect("contiguous"), bl.as_ref()?)))
                .collect()
        })
        .collect()
}

fn mean_of(values: impl Iterator<Item = f64>) -> f64 {
    let (s, m) = values.fold((0.0, 0usize), |(s, m), v| (s + v, m + 1));
    if m == 0 {
        f64::NAN
    } else {
        s / m as f64
    }
}

/// All metrics of [`EmbeddingMetrics`] from the source and target representations (`zs`
/// n_s×d, `zt` n_t×d), their labels (0-based, `< c`; the target's are the true labels, read for
/// evaluation only) and the MCMD parameters of the fit.
pub fn embedding_metrics(
    zs: ArrayView2<f32>,
    ys: &[usize],
    zt: ArrayView2<f32>,
    yt: &[usize],
    c: usize,
    params: &McmdParams,
) -> Result<EmbeddingMetrics> {
    if zs.ncols() != zt.ncols() {
        return Err(Error::Shape {
            what: "dimension of target Z vs source Z".into(),
            expected: zs.ncols().to_string(),
            found: zt.ncols().to_string(),
        });
    }
    let scale = common_scale(zs, zt);
    let (zs, zt) = (ScaledRows::new(zs, scale), ScaledRows::new(zt, scale));
    check_labels(&zs, ys, c, "separability")?;
    check_labels(&zt, yt, c, "separability")?;
    // Each domain's class means once, for its separability and the prototype distances.
    let (ms, mt) = (class_means(zs, ys, c), class_means(zt, yt, c));
    let (source, target) = (separability_around(zs, ys, &ms), separability_around(zt, yt, &mt));
    let d_st = prototype_distances(&ms, &mt);
    let d_tt = prototype_distances(&mt, &mt);
    let d_st_diagonal_mean = mean_of((0..c).filter_map(|k| d_st[k][k]));
    let d_st_off_diagonal_mean = mean_of(
        (0..c)
            .flat_map(|k| (0..c).filter(move |&l| l != k).map(move |l| (k, l)))
            .filter_map(|(k, l)| d_st[k][l]),
    );

    // A collapsed Z (all rows equal) has no bandwidth; the other metrics still describe it.
    let h = scaled_bandwidth(&[zs.z, zt.z], scale, 1.0).ok();
    let mcmd2_per_class = match h {
        Some(h) => {
            let (zs, ys) = sample_rows(zs, ys, 1);
            let (zt, yt) = sample_rows(zt, yt, 2);
            let (ys1, yt1) = (one_hot::<f64>(&ys, c), one_hot::<f64>(&yt, c));
            let d = mcmd2_matrix(
                &Labelled::new(zs.view(), ys1.view()),
                &Labelled::new(zt.view(), yt1.view()),
                params,
                h,
            )?;
            (0..c).map(|k| (ms[k].is_some() && mt[k].is_some()).then(|| d[[k, k]])).collect()
        }
        None => vec![None; c],
    };
    Ok(EmbeddingMetrics {
        scale,
        source,
        target,
        d_st,
        d_tt,
        d_st_diagonal_mean,
        d_st_off_diagonal_mean,
        mcmd2_per_class,
        mcmd_bandwidth: h,
        mcmd_sample_rows: (zs.nrows().max(zt.nrows()) > MCMD_METRIC_ROWS)
            .then_some(MCMD_METRIC_ROWS),
    })
}

/// Rows per domain above which `mcmd2_per_class` is computed on a seeded sample: its kernel
/// sums cost O(n²) (at the VisDA-2017 shape, hours), the other metrics O(n).
pub const MCMD_METRIC_ROWS: usize = 10_000;

/// At most [`MCMD_METRIC_ROWS`] rows of `z` with their labels: all of them, or a seeded sample
/// in row order (`stream` keeps the two domains' draws apart).
fn sample_rows(z: ScaledRows, y: &[usize], stream: u64) -> (Array2<f64>, Vec<usize>) {
    use rand::seq::index::sample;
    use rand::SeedableRng;
    if z.nrows() <= MCMD_METRIC_ROWS {
        return (z.z.mapv(|v| f64::from(v) * z.scale), y.to_vec());
    }
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(0x3e7a_0000 ^ stream);
    let mut rows = sample(&mut rng, z.nrows(), MCMD_METRIC_ROWS).into_vec();
    rows.sort_unstable();
    (z.select(&rows), rows.iter().map(|&i| y[i]).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::LabelKernel;
    use ndarray::array;

    const PARAMS: McmdParams = McmdParams { eps: 0.005, label_kernel: LabelKernel::Linear };

    #[test]
    fn separability_matches_hand_computed_values() {
        // Class 0 at x = ±1 around 0, class 1 at x = 9, 11 around 10: means 0 and 10, overall 5.
        let z = array![[-1.0f32, 0.0], [1.0, 0.0], [9.0, 0.0], [11.0, 0.0]];
        let s = separability(ScaledRows::new(z.view(), 1.0), &[0, 0, 1, 1], 3).unwrap();
        assert!((s.j_b - 25.0).abs() < 1e-12, "{s:?}");
        assert!((s.j_w - 1.0).abs() < 1e-12, "{s:?}");
        assert!((s.ratio - 25.0).abs() < 1e-12);
        assert_eq!(s.classes_present, 2, "an empty class is not averaged into J_b");
        // The rows read scaled: J_b and J_w scale by its square, the ratio not.
        let t = separability(ScaledRows::new(z.view(), 0.5), &[0, 0, 1, 1], 3).unwrap();
        assert!(
            (t.j_b - 6.25).abs() < 1e-12
                && (t.j_w - 0.25).abs() < 1e-12
                && (t.ratio - 25.0).abs() < 1e-12,
            "{t:?}"
        );
    }

    #[test]
    fn tighter_clusters_have_a_higher_ratio() {
        let loose = array![[-2.0f32], [2.0], [8.0], [12.0]];
        let tight = array![[-0.5f32], [0.5], [9.5], [10.5]];
        let y = [0, 0, 1, 1];
        let ratio = |z: &ndarray::Array2<f32>| {
            separability(ScaledRows::new(z.view(), 1.0), &y, 2).unwrap().ratio
        };
        assert!(ratio(&tight) > ratio(&loose));
    }

    #[test]
    fn common_scale_gives_unit_mean_squared_norm() {
        let a = array![[3.0f32, 4.0], [0.0, 0.0]];
        let b = array![[6.0f32, 8.0]];
        let s = common_scale(a.view(), b.view());
        assert!(((25.0 + 0.0 + 100.0) * s * s / 3.0 - 1.0).abs() < 1e-9);
    }

    #[test]
    fn aligned_domains_have_small_diagonal_and_missing_classes_are_none() {
        let zs =
            array![[0.0f32, 0.0], [0.2, 0.0], [5.0, 5.0], [5.2, 5.0], [-5.0, 5.0], [-5.2, 5.0]];
        let ys = [0, 0, 1, 1, 2, 2];
        // Target: classes 0 and 1 only, at the source positions (partial DA).
        let zt = array![[0.1f32, 0.0], [5.1, 5.0], [5.0, 5.1]];
        let yt = [0, 1, 1];
        let m = embedding_metrics(zs.view(), &ys, zt.view(), &yt, 3, &PARAMS).unwrap();
        assert!(m.d_st_diagonal_mean < 0.05 * m.d_st_off_diagonal_mean, "{m:?}");
        assert!(m.d_st[2][2].is_none() && m.d_st[0][2].is_none() && m.d_st[2][0].is_some());
        assert!(m.d_tt[2].iter().all(Option::is_none));
        assert_eq!(m.d_tt[0][0], Some(0.0));
        assert_eq!(m.mcmd2_per_class[2], None);
        assert!(m.mcmd2_per_class[0].unwrap() >= 0.0);
        assert_eq!(m.target.classes_present, 2);
    }

    #[test]
    fn mcmd_per_class_grows_when_a_target_class_moves_away() {
        let zs = array![[0.0f32, 0.0], [0.3, 0.1], [4.0, 0.0], [4.2, 0.3]];
        let ys = [0, 0, 1, 1];
        let near = array![[0.1f32, 0.0], [0.2, 0.1], [4.1, 0.1], [4.0, 0.2]];
        let far = array![[0.1f32, 0.0], [0.2, 0.1], [4.1, 3.1], [4.0, 3.2]];
        let a = embedding_metrics(zs.view(), &ys, near.view(), &ys, 2, &PARAMS).unwrap();
        let b = embedding_metrics(zs.view(), &ys, far.view(), &ys, 2, &PARAMS).unwrap();
        assert!(b.mcmd2_per_class[1].unwrap() > 2.0 * a.mcmd2_per_class[1].unwrap(), "{a:?} {b:?}");
    }

    #[test]
    fn collapsed_representation_gives_metrics_without_mcmd() {
        let z = ndarray::Array2::<f32>::zeros((4, 3));
        let m = embedding_metrics(z.view(), &[0, 0, 1, 1], z.view(), &[0, 1, 1, 1], 2, &PARAMS)
            .unwrap();
        assert_eq!(m.mcmd_bandwidth, None);
        assert_eq!(m.mcmd2_per_class, vec![None, None]);
        assert_eq!(m.target.j_w, 0.0);
    }

    #[test]
    fn mismatched_labels_are_errors_not_panics() {
        let z = array![[0.0f32], [1.0]];
        assert!(embedding_metrics(z.view(), &[0], z.view(), &[0, 1], 2, &PARAMS).is_err());
        assert!(embedding_metrics(z.view(), &[0, 5], z.view(), &[0, 1], 2, &PARAMS).is_err());
    }
}
