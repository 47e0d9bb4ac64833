//! `glshift report` and `glshift iw-ablation` end to end on the small fixture folders, and the
//! headless-Chromium check of the page (skipped, saying so, where chromium is not installed).

mod common;

use std::path::Path;

use common::*;

fn fit(data: &Path, cfg: &Path, out: &Path, method: &str) {
    let o = run(&[
        "fit",
        "--data",
        data.to_str().unwrap(),
        "--source",
        "src",
        "--target",
        "tgt",
        "--method",
        method,
        "--config",
        cfg.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--quiet",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
}

#[test]
fn report_of_a_fit_folder_writes_the_page_and_figures() {
    let dir = tempfile::tempdir().unwrap();
    write_fixture(dir.path());
    let cfg = fast_config(dir.path());
    let (mul, source) = (dir.path().join("mul"), dir.path().join("source"));
    fit(dir.path(), &cfg, &mul, "mul");
    fit(dir.path(), &cfg, &source, "source");
    let o = run(&["report", mul.to_str().unwrap(), "--baseline", source.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let html = std::fs::read_to_string(mul.join("report.html")).unwrap();
    assert!(html.contains("Compared with the baseline run") && html.contains("J_b/J_w"));
    for name in
        ["dst_heatmap", "dtt_heatmap", "tsne_target", "tsne_joint", "prior", "training_curves"]
    {
        assert!(mul.join("figures").join(format!("{name}.png")).is_file(), "{name}.png");
        assert!(mul.join("figures").join(format!("{name}.svg")).is_file(), "{name}.svg");
    }
}

#[test]
fn report_of_a_bench_folder_writes_tables_and_bars() {
    let dir = tempfile::tempdir().unwrap();
    write_fixture(dir.path());
    let cfg = fast_config(dir.path());
    let out = dir.path().join("bench");
    let o = run(&[
        "bench",
        "--data",
        dir.path().to_str().unwrap(),
        "--tasks",
        "src:tgt",
        "--seeds",
        "0,1",
        "--config",
        cfg.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--quiet",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = run(&["report", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(html.contains("Setting uda") && html.contains("data:image/png;base64,"));
    assert!(out.join("figures/bench_bars_uda.png").is_file());
}

#[test]
fn report_of_a_folder_without_results_names_what_it_looked_for() {
    let dir = tempfile::tempdir().unwrap();
    let o = run(&["report", dir.path().to_str().unwrap()]);
    assert!(!o.status.success());
    let err = stderr(&o);
    assert!(err.contains("report.json") && err.contains("results.json"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    let o = run(&["report", dir.path().join("missing").to_str().unwrap()]);
    assert!(!o.status.success() && stderr(&o).contains("missing"), "{}", stderr(&o));
    assert!(out_is_empty(dir.path()));
}

#[test]
fn report_with_a_corrupt_report_json_names_it_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("report.json"), b"not json").unwrap();
    let o = run(&["report", dir.path().to_str().unwrap()]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("report.json"), "{}", stderr(&o));
    assert!(!dir.path().join("report.html").exists() && !dir.path().join("figures").exists());
}

#[test]
fn iw_ablation_on_the_synthetic_task_writes_its_figure() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("fast.toml");
    std::fs::write(&cfg, "pretrain_iters = 30\nadapt_iters = 20\n").unwrap();
    let out = dir.path().join("iw");
    let o = run(&[
        "iw-ablation",
        "--config",
        cfg.to_str().unwrap(),
        "--hidden",
        "16,2",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        out.join("figures/iw_boundary.png").is_file() && out.join("iw_ablation.json").is_file()
    );
    let o = run(&[
        "iw-ablation",
        "--hidden",
        "16,3",
        "--out",
        dir.path().join("bad").to_str().unwrap(),
    ]);
    assert!(!o.status.success() && stderr(&o).contains("2-D"), "{}", stderr(&o));
}

/// Renders a report in headless Chromium through `scripts/render_report.sh` and checks the
/// screenshot is a non-blank PNG. CI installs no browser: there the test prints SKIPPED.
#[test]
fn report_page_renders_in_headless_chromium() {
    let has_chromium = ["chromium", "chromium-browser"].iter().any(|b| {
        std::process::Command::new("sh")
            .args(["-c", &format!("command -v {b}")])
            .output()
            .is_ok_and(|o| o.status.success())
    });
    if !has_chromium {
        eprintln!(
            "SKIPPED: chromium not installed (apt-get install -y chromium to run this check)"
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    write_fixture(dir.path());
    let cfg = fast_config(dir.path());
    let run_dir = dir.path().join("run");
    fit(dir.path(), &cfg, &run_dir, "mul");
    let o = run(&["report", run_dir.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/render_report.sh");
    let shot = dir.path().join("shot.png");
    let o = std::process::Command::new("bash")
        .args([
            script.to_str().unwrap(),
            run_dir.join("report.html").to_str().unwrap(),
            shot.to_str().unwrap(),
            "1000",
            "1400",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let bytes = std::fs::read(&shot).unwrap();
    let mut dec = png::Decoder::new(std::io::Cursor::new(bytes)).read_info().unwrap();
    assert_eq!((dec.info().width, dec.info().height), (1000, 1400));
    let mut buf = vec![0u8; dec.output_buffer_size()];
    dec.next_frame(&mut buf).unwrap();
    let dark = buf.iter().filter(|&&v| v < 128).count();
    assert!(dark > buf.len() / 200, "the screenshot is blank: the page did not render");
}

#[test]
fn report_figures_are_identical_across_processes() {
    // Same run, two `glshift report` processes: byte-identical figures (the t-SNE draws no
    // entropy from the process, e.g. through a thread-local RNG).
    let dir = tempfile::tempdir().unwrap();
    write_fixture(dir.path());
    let cfg = fast_config(dir.path());
    let run_dir = dir.path().join("run");
    fit(dir.path(), &cfg, &run_dir, "mul");
    let mut pages = Vec::new();
    for _ in 0..2 {
        let o = run(&["report", run_dir.to_str().unwrap()]);
        assert!(o.status.success(), "{}", stderr(&o));
        let read = |f: &str| std::fs::read(run_dir.join("figures").join(f)).unwrap();
        pages.push((
            read("tsne_joint.png"),
            read("tsne_target.svg"),
            std::fs::read(run_dir.join("report.html")).unwrap(),
        ));
    }
    assert!(pages[0] == pages[1], "a second report process drew different figures");
}
