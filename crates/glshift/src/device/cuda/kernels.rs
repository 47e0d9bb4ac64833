//! The three elementwise kernels of the GPU kernel sums, compiled by NVRTC when the GPU is
//! first used (no CUDA toolkit at build time). Row-major buffers; grid-stride loops.

use std::sync::Arc;

use cudarc::driver::{CudaContext, CudaFunction};

/// CUDA C source. `gauss` turns a tile of inner products D = Z_I Z_Jᵀ (p×q) into the Gaussian
/// K = exp(min(2D − ‖z_i‖² − ‖z_j‖², 0)/h) in place, as the CPU's `simd::gauss_tile` does;
/// `hadamard` is M ← M ∘ K; `finish` turns the accumulated Σ_j H_ij z_j (G) and row sums r
/// into the gradient scale·(G − r ∘ Z).
pub(super) const SOURCE: &str = r#"
extern "C" __global__ void gauss(float* d, const float* na, const float* nb, int p, int q, float inv_h) {
    long long total = (long long)p * q;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < total;
         i += (long long)gridDim.x * blockDim.x) {
        long long r = i / q;
        long long c = i - r * q;
        float v = d[i];
        float e = ((v + v) - na[r] - nb[c]) * inv_h;
        d[i] = expf(fminf(e, 0.0f));
    }
}

extern "C" __global__ void hadamard(float* m, const float* k, long long total) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < total;
         i += (long long)gridDim.x * blockDim.x) {
        m[i] *= k[i];
    }
}

extern "C" __global__ void finish(float* g, const float* z, const float* r, int n, int d, float scale) {
    long long total = (long long)n * d;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < total;
         i += (long long)gridDim.x * blockDim.x) {
        long long row = i / d;
        g[i] = scale * (g[i] - r[row] * z[i]);
    }
}
"#;

/// The loaded kernels.
pub(super) struct Kernels {
    pub gauss: CudaFunction,
    pub hadamard: CudaFunction,
    pub finish: CudaFunction,
}

/// Compiles [`SOURCE`] to PTX with NVRTC (no device needed).
pub(super) fn compile() -> Result<cudarc::nvrtc::Ptx, String> {
    cudarc::nvrtc::compile_ptx(SOURCE).map_err(|e| format!("NVRTC could not compile the kernels: {e}"))
}

impl Kernels {
    pub(super) fn load(ctx: &Arc<CudaContext>) -> Result<Kernels, String> {
        let module = ctx.load_module(compile()?).map_err(|e| format!("loading the kernels: {e}"))?;
        let f = |name: &str| module.load_function(name).map_err(|e| format!("kernel {name}: {e}"));
        Ok(Kernels { gauss: f("gauss")?, hadamard: f("hadamard")?, finish: f("finish")? })
    }
}

/// Launch shape of a grid-stride loop over `total` elements.
pub(super) fn launch_config(total: usize) -> cudarc::driver::LaunchConfig {
    const THREADS: usize = 256;
    let blocks = total.div_ceil(THREADS).clamp(1, 65_535 * 16);
    cudarc::driver::LaunchConfig { grid_dim: (blocks as u32, 1, 1), block_dim: (THREADS as u32, 1, 1), shared_mem_bytes: 0 }
}

#[cfg(test)]
mod tests {
    /// The kernels compile wherever NVRTC can be loaded (no GPU needed); skipped without it.
    #[test]
    fn kernels_compile_with_nvrtc_where_it_is_installed() {
        // SAFETY: only probes whether the shared library can be opened.
        if !unsafe { cudarc::nvrtc::sys::is_culib_present() } {
            eprintln!("skipped: NVRTC (libnvrtc) not found");
            return;
        }
        let ptx = super::compile().expect("kernels compile");
        let text = ptx.to_src();
        for name in ["gauss", "hadamard", "finish"] {
            assert!(text.contains(&format!(".entry {name}")), "PTX lacks {name}");
        }
    }
}
