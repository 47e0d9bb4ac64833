//! Every figure type, drawn from small synthetic inputs and written as the reports write them:
//! each file exists, is a valid PNG / SVG of the expected size and is not blank.

mod common;

use common::assert_figure;
use glshift_experiments::iw::IwRegions;
use glshift_report::figure::Figure;
use glshift_report::figures::{
    Boundaries, BoundaryPanel, CurvePoint, Heatmap, MethodBars, PriorFigure, Scatter,
    TrainingCurves,
};
use glshift_report::run::figure_files;

fn write(fig: &Figure) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    glshift::output::write_files_atomically(&figure_files(dir.path(), std::slice::from_ref(fig)))
        .unwrap();
    dir
}

fn names(c: usize) -> Vec<String> {
    (0..c).map(|k| format!("class_{k}")).collect()
}

#[test]
fn heatmap_files_are_valid_and_sized_for_the_matrix() {
    let values: Vec<Vec<Option<f64>>> =
        (0..4).map(|r| (0..3).map(|c| Some((r as f64 - c as f64).abs())).collect()).collect();
    let h = Heatmap {
        title: "D".into(),
        subtitle: "sub".into(),
        row_axis: "rows".into(),
        col_axis: "cols".into(),
        row_names: names(4),
        col_names: names(3),
        values,
    };
    let fig = h.render("dst_heatmap", "test").unwrap();
    // cell = clamp(600 / 4, 22, 72) = 72; width = max(420, 150 + 90 + 3·72); height = 80 + 40 + 4·72.
    assert_eq!((fig.width, fig.height), (456, 408));
    let dir = write(&fig);
    assert_figure(dir.path(), "dst_heatmap", 456, 408, 12);
}

#[test]
fn heatmap_with_missing_cells_still_draws() {
    let values = vec![vec![Some(0.5), None], vec![None, None]];
    let h = Heatmap {
        title: "D".into(),
        subtitle: "sub".into(),
        row_axis: "r".into(),
        col_axis: "c".into(),
        row_names: names(2),
        col_names: names(2),
        values,
    };
    let dir = write(&h.render("dtt_heatmap", "test").unwrap());
    assert_figure(dir.path(), "dtt_heatmap", 420, 264, 4);
}

#[test]
fn scatter_files_are_valid_and_print_cluster_scatter() {
    let points: Vec<(f32, f32)> = (0..60)
        .map(|i| ((i % 3) as f32 * 10.0 + (i as f32 * 0.37).sin(), (i as f32 * 0.91).cos()))
        .collect();
    let s = Scatter {
        title: "t-SNE".into(),
        labels: (0..60).map(|i| i % 3).collect(),
        is_target: (0..60).map(|i| i % 2 == 0).collect(),
        points,
        class_names: names(3),
    };
    assert!(s.target_scatter().iter().all(|v| v.is_some_and(|v| v > 0.0)));
    let fig = s.render("tsne_joint", "test").unwrap();
    assert!(
        fig.svg.contains(&format!("{:.1}", s.target_scatter()[0].unwrap())),
        "scatter value printed beside the cluster"
    );
    let dir = write(&fig);
    assert_figure(dir.path(), "tsne_joint", 900, 680, 60);
}

#[test]
fn prior_files_are_valid_with_and_without_an_estimate() {
    let mut p = PriorFigure {
        title: "prior".into(),
        class_names: names(4),
        source: vec![0.25; 4],
        estimated: Some(vec![0.5, 0.5, 0.0, 0.0]),
        truth: Some(vec![0.45, 0.55, 0.0, 0.0]),
        interval: Some((vec![0.4, 0.4, 0.0, 0.0], vec![0.6, 0.6, 0.01, 0.01])),
    };
    let dir = write(&p.render("prior", "test").unwrap());
    assert_figure(dir.path(), "prior", 900, 620, 12);
    p.estimated = None;
    let dir = write(&p.render("prior", "test").unwrap());
    assert_figure(dir.path(), "prior", 900, 620, 8);
    p.source = vec![1.0];
    assert!(p.render("prior", "test").is_err(), "wrong lengths are an error, not a panic");
}

#[test]
fn training_curves_files_are_valid() {
    let points: Vec<CurvePoint> = (0..80)
        .map(|i| CurvePoint {
            iter: i,
            adapt: i >= 30,
            ce: 2.0 / (1.0 + i as f64),
            j_tu: if i >= 30 { 0.5 / (i as f64 - 29.0) } else { 0.0 },
            j_du: if i >= 30 { 1.0 + 0.01 * i as f64 } else { 0.0 },
            target_prior: (i >= 30).then(|| vec![0.2 + 0.001 * i as f64, 0.8 - 0.001 * i as f64]),
        })
        .collect();
    let c = TrainingCurves { title: "curves".into(), class_names: names(2), points };
    let dir = write(&c.render("training_curves", "test").unwrap());
    assert_figure(dir.path(), "training_curves", 900, 760, 10);
}

#[test]
fn decision_boundary_files_are_valid() {
    let res = 20;
    let panel = |shift: usize| BoundaryPanel {
        title: "panel".into(),
        regions: IwRegions {
            x_range: (-1.0, 1.0),
            y_range: (-1.0, 1.0),
            res,
            grid: (0..res * res).map(|i| ((i % res) * 4 / res + shift) % 4).collect(),
            targets: vec![(-0.5, 0.5, 0), (-0.4, 0.4, 1)],
            prototypes: vec![Some((-0.5, 0.0)), Some((0.0, 0.5)), Some((0.5, 0.0)), None],
        },
    };
    let b = Boundaries {
        title: "IW".into(),
        class_names: names(4),
        shared: vec![true, true, false, false],
        panels: vec![panel(0), panel(1)],
    };
    let dir = write(&b.render("iw_boundary", "test").unwrap());
    assert_figure(dir.path(), "iw_boundary", 1090, 520, 2 * res * res);
}

#[test]
fn bench_bars_files_are_valid() {
    let b = MethodBars {
        title: "bench".into(),
        groups: vec!["A→W".into(), "W→D".into(), "Avg".into()],
        methods: vec!["source".into(), "mul".into()],
        values: vec![
            vec![Some((85.0, 1.0)), Some((97.0, 0.5)), Some((91.0, 0.7))],
            vec![Some((90.0, 4.0)), None, None],
        ],
    };
    let dir = write(&b.render("bench_bars_uda", "test").unwrap());
    assert_figure(dir.path(), "bench_bars_uda", 600, 460, 6);
}
