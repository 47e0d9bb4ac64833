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

/// The kernel sums' kernel names in [`SOURCE`].
const NAMES: [&str; 3] = ["gauss", "hadamard", "finish"];

/// Compiles `source` (`what`, for errors) to PTX with NVRTC (no device needed).
pub(super) fn compile(source: &str, what: &str) -> Result<cudarc::nvrtc::Ptx, String> {
    cudarc::nvrtc::compile_ptx(source).map_err(|e| format!("NVRTC could not compile {what}: {e}"))
}

/// Compiles `source`, loads it into `ctx` and returns its kernels `names`, in that order.
pub(super) fn load_functions(ctx: &Arc<CudaContext>, source: &str, what: &str, names: &[&str]) -> Result<Vec<CudaFunction>, String> {
    let module = ctx.load_module(compile(source, what)?).map_err(|e| format!("loading {what}: {e}"))?;
    names.iter().map(|name| module.load_function(name).map_err(|e| format!("kernel {name}: {e}"))).collect()
}

impl Kernels {
    pub(super) fn load(ctx: &Arc<CudaContext>) -> Result<Kernels, String> {
        let [gauss, hadamard, finish]: [CudaFunction; 3] =
            load_functions(ctx, SOURCE, "the kernels", &NAMES)?.try_into().map_err(|_| "a kernel is missing".to_string())?;
        Ok(Kernels { gauss, hadamard, finish })
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
    use super::super::{net_backend::K, net_kernels};

    /// Both kernel sources (the kernel sums', the network's) compile wherever NVRTC can be
    /// loaded (no GPU needed), every kernel in the PTX; skipped without NVRTC.
    #[test]
    fn kernels_compile_with_nvrtc_where_it_is_installed() {
        // SAFETY: only probes whether the shared library can be opened.
        if !unsafe { cudarc::nvrtc::sys::is_culib_present() } {
            eprintln!("skipped: NVRTC (libnvrtc) not found");
            return;
        }
        let net_names: Vec<&str> = K::ALL.iter().map(|k| k.name()).collect();
        for (source, names) in [(super::SOURCE, &super::NAMES[..]), (net_kernels::SOURCE, &net_names[..])] {
            let text = super::compile(source, "the kernels").expect("the kernels compile").to_src();
            for name in names {
                assert!(text.contains(&format!(".entry {name}")), "PTX lacks {name}");
            }
        }
    }
}
