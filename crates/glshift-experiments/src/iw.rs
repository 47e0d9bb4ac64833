//! The importance-weighting ablation of the paper ("effect of importance weighting"), training
//! half: keep the first 4 classes of both domains, let the target hold only the first 2 (shared
//! classes; the other 2 are source-only outlier classes), train MUL with a 2-D representation
//! Z with and without importance-weighted cross-entropy, and evaluate F's decisions on a grid
//! over Z. `glshift_report::iw` draws the regions with the target rows and the source class
//! prototypes.
//!
//! Why a 2-D bottleneck rather than a projection: F is linear on Z, so with z_dim = 2 the
//! regions drawn are exactly the classifier's decisions, not an approximation of a
//! high-dimensional boundary.

use glshift::config::FitConfig;
use glshift::data::Domain;
use glshift::eval::metrics::{class_means, ScaledRows};
use glshift::methods::MethodKind;
use glshift::pipeline;
use ndarray::Array2;
use serde::Serialize;

use crate::protocol::{self, Protocol};
use crate::{Error, Result};

/// Settings of the ablation.
#[derive(Clone, Debug)]
pub struct IwOptions {
    /// Classes kept in both domains (the first ones of classes.txt).
    pub classes: usize,
    /// Of those, the first `shared` stay in the target.
    pub shared: usize,
    /// G's widths; the last must be 2.
    pub hidden: Vec<usize>,
    /// Grid cells per axis of the decision-region background.
    pub grid_res: usize,
}

impl Default for IwOptions {
    fn default() -> Self {
        IwOptions { classes: 4, shared: 2, hidden: vec![256, 2], grid_res: 150 }
    }
}

/// F's decisions on a grid over the 2-D Z, with the target rows and the source prototypes;
/// `glshift_report`'s decision-region figure draws this record as it is.
#[derive(Clone, Debug, Default)]
pub struct IwRegions {
    pub x_range: (f64, f64),
    pub y_range: (f64, f64),
    /// Grid cells per axis.
    pub res: usize,
    /// F's class per grid cell (res × res, x fastest: `grid[j * res + i]` for column i, row j
    /// from the bottom).
    pub grid: Vec<usize>,
    /// (z₁, z₂, true class) of every target row.
    pub targets: Vec<(f64, f64, usize)>,
    /// Source class means on Z (None for a class without source rows).
    pub prototypes: Vec<Option<(f64, f64)>>,
}

/// One trained model of the ablation.
#[derive(Clone, Debug, Serialize)]
pub struct IwRun {
    pub importance_weighting: bool,
    pub target_accuracy: Option<f64>,
    /// Fraction of target rows predicted as an outlier class (none of them is one).
    pub outlier_prediction_share: f64,
    /// Fraction of the drawn region (the box around the target rows and prototypes) that F
    /// assigns to an outlier class.
    pub outlier_area_share: f64,
    pub estimated_target_prior: Option<Vec<f64>>,
    #[serde(skip)]
    pub regions: IwRegions,
}

/// Both runs of the ablation (`iw_ablation.json`).
#[derive(Clone, Debug, Serialize)]
pub struct IwAblation {
    pub source: String,
    pub target: String,
    pub seed: u64,
    pub class_names: Vec<String>,
    pub shared: Vec<bool>,
    pub runs: Vec<IwRun>,
}

fn bounds(points: impl Iterator<Item = (f64, f64)>) -> ((f64, f64), (f64, f64)) {
    let (mut x0, mut x1, mut y0, mut y1) =
        (f64::INFINITY, f64::NEG_INFINITY, f64::INFINITY, f64::NEG_INFINITY);
    for (x, y) in points {
        (x0, x1, y0, y1) = (x0.min(x), x1.max(x), y0.min(y), y1.max(y));
    }
    let px = ((x1 - x0) * 0.15).max(1e-3);
    let py = ((y1 - y0) * 0.15).max(1e-3);
    ((x0 - px, x1 + px), (y0 - py, y1 + py))
}

fn argmax(row: ndarray::ArrayView1<f32>) -> usize {
    row.iter()
        .enumerate()
        .fold((0, f32::NEG_INFINITY), |b, (k, &v)| if v > b.1 { (k, v) } else { b })
        .0
}

fn train_one(
    source: &Domain,
    target: &Domain,
    cfg: &FitConfig,
    shared: usize,
    res: usize,
) -> Result<IwRun> {
    let out = pipeline::run(source, target, cfg, &mut |_| {})?;
    let c = source.n_classes();
    let protos: Vec<Option<(f64, f64)>> =
        class_means(ScaledRows::new(out.source_z.view(), 1.0), &out.source_labels, c)
            .into_iter()
            .map(|m| m.map(|m| (m[0], m[1])))
            .collect();
    let zt = &out.target_z;
    let pts = zt
        .rows()
        .into_iter()
        .map(|r| (f64::from(r[0]), f64::from(r[1])))
        .chain(protos.iter().flatten().copied());
    let (xr, yr) = bounds(pts);
    let grid_z = Array2::from_shape_fn((res * res, 2), |(idx, d)| {
        let (i, j) = ((idx % res) as f64 + 0.5, (idx / res) as f64 + 0.5);
        (if d == 0 {
            xr.0 + i * (xr.1 - xr.0) / res as f64
        } else {
            yr.0 + j * (yr.1 - yr.0) / res as f64
        }) as f32
    });
    let grid: Vec<usize> =
        out.model.network().f.forward(grid_z.view()).rows().into_iter().map(argmax).collect();
    let predicted = out.predictions();
    let targets: Vec<(f64, f64, usize)> = match &out.target_labels {
        Some(y) => zt
            .rows()
            .into_iter()
            .zip(y)
            .map(|(r, &k)| (f64::from(r[0]), f64::from(r[1]), k))
            .collect(),
        None => {
            return Err(Error::bad_data(
                "IW ablation",
                "the target needs labels to build the partial task",
            ))
        }
    };
    let r = &out.report;
    Ok(IwRun {
        importance_weighting: cfg.mul.importance_weighting,
        target_accuracy: r.target_accuracy,
        outlier_prediction_share: predicted.iter().filter(|&&k| k >= shared).count() as f64
            / predicted.len().max(1) as f64,
        outlier_area_share: grid.iter().filter(|&&k| k >= shared).count() as f64
            / grid.len() as f64,
        estimated_target_prior: r.estimated_target_prior.clone(),
        regions: IwRegions { x_range: xr, y_range: yr, res, grid, targets, prototypes: protos },
    })
}

/// Runs the ablation on a labelled source/target pair (`base` gives every other setting).
pub fn iw_ablation(
    source: &Domain,
    target: &Domain,
    base: &FitConfig,
    opts: &IwOptions,
) -> Result<IwAblation> {
    if opts.hidden.last() != Some(&2) {
        return Err(Error::bad_data(
            "IW ablation",
            format!("the last hidden width must be 2 (a 2-D Z), got {:?}", opts.hidden),
        ));
    }
    if opts.shared == 0 || opts.shared >= opts.classes {
        return Err(Error::bad_data(
            "IW ablation",
            format!("shared classes must lie in 1..{}", opts.classes),
        ));
    }
    let s = protocol::first_classes(source, opts.classes)?;
    let t = protocol::first_classes(target, opts.classes)?;
    let (s, t) = protocol::apply(Protocol::Pda { classes: opts.shared }, &s, &t)?;
    let mut runs = Vec::new();
    for iw in [false, true] {
        let mut cfg = FitConfig { method: MethodKind::Mul, ..base.clone() };
        cfg.network.hidden = opts.hidden.clone();
        cfg.network.activation_on_z = false;
        cfg.mul.importance_weighting = iw;
        runs.push(train_one(&s, &t, &cfg, opts.shared, opts.grid_res)?);
    }
    Ok(IwAblation {
        source: source.name.clone(),
        target: target.name.clone(),
        seed: base.seed,
        class_names: s.class_names.clone(),
        shared: (0..opts.classes).map(|k| k < opts.shared).collect(),
        runs,
    })
}
