//! The network kernels of full-batch training on the GPU (`net_kernels.cu`): compiled by NVRTC
//! on first use, loaded into the GPU's context, launched by `net`.

use std::sync::Arc;

use cudarc::driver::{CudaContext, CudaFunction};

/// The CUDA C source; its header says how the same text also builds for the CPU tests.
pub(super) const SOURCE: &str = include_str!("net_kernels.cu");

/// The kernels, by name, as `net` launches them.
pub(super) struct NetKernels {
    pub add_bias: CudaFunction,
    pub col_sum_part: CudaFunction,
    pub col_sqdev_part: CudaFunction,
    pub col_dot_part: CudaFunction,
    pub col_finish: CudaFunction,
    pub bn_rstd: CudaFunction,
    pub bn_forward: CudaFunction,
    pub bn_backward: CudaFunction,
    pub act_forward: CudaFunction,
    pub act_backward: CudaFunction,
    pub mul_inplace: CudaFunction,
    pub adam: CudaFunction,
    pub flag_nonfinite: CudaFunction,
}

/// Every kernel of [`SOURCE`] (the PTX test checks each is there).
#[cfg(test)]
pub(super) const NAMES: [&str; 13] = [
    "add_bias",
    "col_sum_part",
    "col_sqdev_part",
    "col_dot_part",
    "col_finish",
    "bn_rstd",
    "bn_forward",
    "bn_backward",
    "act_forward",
    "act_backward",
    "mul_inplace",
    "adam",
    "flag_nonfinite",
];

/// Compiles [`SOURCE`] to PTX with NVRTC (no device needed).
pub(super) fn compile() -> Result<cudarc::nvrtc::Ptx, String> {
    cudarc::nvrtc::compile_ptx(SOURCE).map_err(|e| format!("NVRTC could not compile the network kernels: {e}"))
}

impl NetKernels {
    pub(super) fn load(ctx: &Arc<CudaContext>) -> Result<NetKernels, String> {
        let module = ctx.load_module(compile()?).map_err(|e| format!("loading the network kernels: {e}"))?;
        let f = |name: &str| module.load_function(name).map_err(|e| format!("kernel {name}: {e}"));
        Ok(NetKernels {
            add_bias: f("add_bias")?,
            col_sum_part: f("col_sum_part")?,
            col_sqdev_part: f("col_sqdev_part")?,
            col_dot_part: f("col_dot_part")?,
            col_finish: f("col_finish")?,
            bn_rstd: f("bn_rstd")?,
            bn_forward: f("bn_forward")?,
            bn_backward: f("bn_backward")?,
            act_forward: f("act_forward")?,
            act_backward: f("act_backward")?,
            mul_inplace: f("mul_inplace")?,
            adam: f("adam")?,
            flag_nonfinite: f("flag_nonfinite")?,
        })
    }
}

#[cfg(test)]
mod tests {
    /// The network kernels compile wherever NVRTC can be loaded (no GPU needed); skipped
    /// without it.
    #[test]
    fn network_kernels_compile_with_nvrtc_where_it_is_installed() {
        // SAFETY: only probes whether the shared library can be opened.
        if !unsafe { cudarc::nvrtc::sys::is_culib_present() } {
            eprintln!("skipped: NVRTC (libnvrtc) not found");
            return;
        }
        let ptx = super::compile().expect("network kernels compile");
        let text = ptx.to_src();
        for name in super::NAMES {
            assert!(text.contains(&format!(".entry {name}")), "PTX lacks {name}");
        }
    }
}
