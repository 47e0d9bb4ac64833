//! The Python peers of `glshift perf` (numpy, JAX, dense inverse; `bench/reference/mcmd_peer.py`)
//! on the same input as ours, in a temporary folder.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{anyhow, bail, Context, Result};
use glshift::kernel::{self, McmdEstimator};
use glshift_experiments::perf::Workload;
use serde_json::Value;

use super::PerfArgs;

fn peer_script(args: &PerfArgs) -> PathBuf {
    if let Some(p) = &args.peer_script {
        return p.clone();
    }
    let local = PathBuf::from("bench/reference/mcmd_peer.py");
    if local.exists() {
        return local;
    }
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bench/reference/mcmd_peer.py")
}

/// Whether `python` runs and imports numpy.
pub(super) fn python_with_numpy(python: &str) -> bool {
    Command::new(python)
        .args(["-c", "import numpy"])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false)
}

/// The peers' input folder, or why the peers do not run.
pub(super) enum PeerInput {
    Dir(TempDir),
    Skipped(Value),
}

/// Writes the input and our results for the peer script.
pub(super) fn prepare_peers(
    args: &PerfArgs,
    w: &Workload,
    ours: &kernel::TuDuGrad<f32>,
    est: McmdEstimator,
) -> Result<Option<PeerInput>> {
    if est != McmdEstimator::Exact {
        bail!("the Python peers compute the exact objectives: use --mcmd exact with --peers");
    }
    if !python_with_numpy(&args.python) {
        return Ok(Some(PeerInput::Skipped(
            serde_json::json!({ "skipped": format!("{} with numpy not available", args.python) }),
        )));
    }
    let dir = tempfile_dir()?;
    w.write_npy(dir.path(), Some(ours))?;
    Ok(Some(PeerInput::Dir(dir)))
}

/// Runs the peer script on the prepared folder, returns its JSON.
pub(super) fn run_peers(args: &PerfArgs, dir: &TempDir) -> Result<Value> {
    let script = peer_script(args);
    let out = Command::new(&args.python)
        .arg(&script)
        .arg("--dir")
        .arg(dir.path())
        .args(["--runs", &args.runs.to_string()])
        .args(["--dense-inverse-max-n", &args.dense_inverse_max_n.to_string()])
        .output()
        .with_context(|| format!("running {} {}", args.python, script.display()))?;
    if !out.status.success() {
        bail!(
            "peer script {} failed: {}",
            script.display(),
            String::from_utf8_lossy(&out.stderr).lines().last().unwrap_or("")
        );
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let last = text.lines().last().ok_or_else(|| anyhow!("peer script printed nothing"))?;
    serde_json::from_str(last).context("peer script output is not JSON")
}

/// A temporary folder removed on drop (std only).
pub(super) struct TempDir(PathBuf);

impl TempDir {
    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn tempfile_dir() -> Result<TempDir> {
    let base = std::env::temp_dir().join(format!("glshift-perf-{}", std::process::id()));
    std::fs::create_dir_all(&base).with_context(|| format!("creating {}", base.display()))?;
    Ok(TempDir(base))
}
