//! The network kernels of full-batch training on the GPU (`net_kernels.cu`): compiled by NVRTC
//! on first use, loaded into the GPU's context, launched by `net`.

use std::sync::Arc;

use cudarc::driver::{CudaContext, CudaFunction};

use super::kernels::load_functions;
use super::net_backend::K;

/// The CUDA C source; its header says how the same text also builds for the CPU tests.
pub(super) const SOURCE: &str = include_str!("net_kernels.cu");

/// The kernels, loaded, in [`K::ALL`]'s order.
pub(super) struct NetKernels {
    fns: Vec<CudaFunction>,
}

impl NetKernels {
    pub(super) fn load(ctx: &Arc<CudaContext>) -> Result<NetKernels, String> {
        let names: Vec<&str> = K::ALL.iter().map(|k| k.name()).collect();
        Ok(NetKernels { fns: load_functions(ctx, SOURCE, "the network kernels", &names)? })
    }

    /// Kernel `k`.
    pub(super) fn get(&self, k: K) -> &CudaFunction {
        &self.fns[K::ALL.iter().position(|&x| x == k).expect("every kernel is in K::ALL")]
    }
}
