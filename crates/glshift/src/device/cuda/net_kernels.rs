//! The network kernels of full-batch training on the GPU (`net_kernels.cu`): compiled by NVRTC
//! on first use, loaded into the GPU's context, launched by `net`.

use std::sync::Arc;

use cudarc::driver::{CudaContext, CudaFunction};

use super::net_backend::K;

/// The CUDA C source; its header says how the same text also builds for the CPU tests.
pub(super) const SOURCE: &str = include_str!("net_kernels.cu");

/// The kernels, loaded, in [`K::ALL`]'s order.
pub(super) struct NetKernels {
    fns: Vec<CudaFunction>,
}

/// Compiles [`SOURCE`] to PTX with NVRTC (no device needed).
pub(super) fn compile() -> Result<cudarc::nvrtc::Ptx, String> {
    cudarc::nvrtc::compile_ptx(SOURCE).map_err(|e| format!("NVRTC could not compile the network kernels: {e}"))
}

impl NetKernels {
    pub(super) fn load(ctx: &Arc<CudaContext>) -> Result<NetKernels, String> {
        let module = ctx.load_module(compile()?).map_err(|e| format!("loading the network kernels: {e}"))?;
        let fns = K::ALL
            .iter()
            .map(|k| module.load_function(k.name()).map_err(|e| format!("kernel {}: {e}", k.name())))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(NetKernels { fns })
    }

    /// Kernel `k`.
    pub(super) fn get(&self, k: K) -> &CudaFunction {
        &self.fns[K::ALL.iter().position(|&x| x == k).expect("every kernel is in K::ALL")]
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
        for k in super::K::ALL {
            assert!(text.contains(&format!(".entry {}", k.name())), "PTX lacks {}", k.name());
        }
    }
}
