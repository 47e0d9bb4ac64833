//! The GPU's kernels (`kernels.cu`), compiled by NVRTC when the GPU is first used (no CUDA
//! toolkit at build time), loaded into its context and launched through [`super::Backend`].

use std::sync::Arc;

use cudarc::driver::{CudaContext, CudaFunction};

/// The kernels of `kernels.cu`, by the name they are compiled under.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum K {
    AddBias,
    ColPart,
    ColFinish,
    BnRstd,
    BnForward,
    BnBackward,
    ActForward,
    ActBackward,
    MulInplace,
    Adam,
    FlagNonfinite,
    CenterRows,
    Gauss,
    GradFinish,
    GatherRows,
    ScatterAddRows,
}

impl K {
    /// Every kernel, in `kernels.cu`'s order.
    pub(crate) const ALL: [K; 16] = [
        K::AddBias,
        K::ColPart,
        K::ColFinish,
        K::BnRstd,
        K::BnForward,
        K::BnBackward,
        K::ActForward,
        K::ActBackward,
        K::MulInplace,
        K::Adam,
        K::FlagNonfinite,
        K::CenterRows,
        K::Gauss,
        K::GradFinish,
        K::GatherRows,
        K::ScatterAddRows,
    ];

    /// The kernel's name in the source.
    pub(crate) fn name(self) -> &'static str {
        match self {
            K::AddBias => "add_bias",
            K::ColPart => "col_part",
            K::ColFinish => "col_finish",
            K::BnRstd => "bn_rstd",
            K::BnForward => "bn_forward",
            K::BnBackward => "bn_backward",
            K::ActForward => "act_forward",
            K::ActBackward => "act_backward",
            K::MulInplace => "mul_inplace",
            K::Adam => "adam",
            K::FlagNonfinite => "flag_nonfinite",
            K::CenterRows => "center_rows",
            K::Gauss => "gauss",
            K::GradFinish => "grad_finish",
            K::GatherRows => "gather_rows",
            K::ScatterAddRows => "scatter_add_rows",
        }
    }
}

/// The CUDA C source; its header says how the same text also builds for the CPU tests.
pub(super) const SOURCE: &str = include_str!("kernels.cu");

/// The kernels, loaded, in [`K::ALL`]'s order.
pub(super) struct Kernels {
    fns: Vec<CudaFunction>,
}

/// Compiles [`SOURCE`] to PTX with NVRTC (no device needed).
fn compile() -> Result<cudarc::nvrtc::Ptx, String> {
    cudarc::nvrtc::compile_ptx(SOURCE)
        .map_err(|e| format!("NVRTC could not compile the kernels: {e}"))
}

impl Kernels {
    pub(super) fn load(ctx: &Arc<CudaContext>) -> Result<Kernels, String> {
        let module =
            ctx.load_module(compile()?).map_err(|e| format!("loading the kernels: {e}"))?;
        let fns = K::ALL.iter().map(|k| {
            module.load_function(k.name()).map_err(|e| format!("kernel {}: {e}", k.name()))
        });
        Ok(Kernels { fns: fns.collect::<Result<_, _>>()? })
    }

    /// Kernel `k`.
    pub(super) fn get(&self, k: K) -> &CudaFunction {
        &self.fns[K::ALL.iter().position(|&x| x == k).expect("every kernel is in K::ALL")]
    }
}

/// Launch shape of a grid-stride loop over `total` elements.
pub(super) fn launch_config(total: usize) -> cudarc::driver::LaunchConfig {
    const THREADS: usize = 256;
    let blocks = total.div_ceil(THREADS).clamp(1, 65_535 * 16);
    cudarc::driver::LaunchConfig {
        grid_dim: (blocks as u32, 1, 1),
        block_dim: (THREADS as u32, 1, 1),
        shared_mem_bytes: 0,
    }
}

#[cfg(test)]
mod tests {
    use super::K;

    /// The kernels compile wherever NVRTC can be loaded (no GPU needed), every kernel of
    /// [`K::ALL`] in the PTX; skipped without NVRTC.
    #[test]
    fn kernels_compile_with_nvrtc_where_it_is_installed() {
        // SAFETY: only probes whether the shared library can be opened.
        if !unsafe { cudarc::nvrtc::sys::is_culib_present() } {
            eprintln!("skipped: NVRTC (libnvrtc) not found");
            return;
        }
        let text = super::compile().expect("the kernels compile").to_src();
        for k in K::ALL {
            assert!(text.contains(&format!(".entry {}", k.name())), "PTX lacks {}", k.name());
        }
    }
}
