// The GPU's elementwise and column-reduction kernels: for the network of full-batch training
// (`net.rs`: bias, BatchNorm, activations, dropout masks, column sums, AdamW) and for the exact
// kernel sums (`sums.rs`: the Gaussian of a tile of inner products, the gradient's last step).
// Row-major buffers, n rows x d columns.
//
// One source, two compilers. NVRTC builds it for the GPU (`__CUDACC_RTC__`): `EACH` is a
// grid-stride loop. A host C compiler builds it for the CPU tests (`kernels_host.rs`): `EACH`
// is a plain loop, so every kernel's arithmetic and indexing is checked against the Rust code
// it stands in for without a GPU. Hence C only: no templates, no shared memory, no atomics on
// floats; column sums go by fixed chunks of rows, so the GPU's sums are deterministic too.
// Neither build contracts multiply-adds into FMA (NVRTC `--fmad=false`, the host compiler
// `-ffp-contract=off`), so both round as the source reads; CI also runs the host build with FMA.

#ifdef __CUDACC_RTC__
#define KERNEL extern "C" __global__ void
#define EACH(i, n) \
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < (long long)(n); \
         i += (long long)gridDim.x * blockDim.x)
#else
#include <math.h>
#define KERNEL void
#define EACH(i, n) for (long long i = 0; i < (long long)(n); ++i)
#endif

// y[r, j] += b[j] over `total` = rows * d values.
KERNEL add_bias(float* y, const float* b, long long total, int d) {
    EACH(i, total) { y[i] += b[i % d]; }
}

// part[k, j] = the sum over the rows r of chunk k (rows k*chunk .. of `rows`), in row order, of
// a[r, j] (mode 0), (a[r, j] - b[j])^2 (mode 1: b the column means) or a[r, j] * b[r, j] (mode 2).
KERNEL col_part(const float* a, const float* b, float* part, int rows, int d, int chunk, int mode) {
    long long chunks = ((long long)rows + chunk - 1) / chunk;
    EACH(i, chunks * d) {
        long long k = i / d;
        long long j = i - k * d;
        long long r0 = k * chunk;
        long long r1 = r0 + chunk < rows ? r0 + chunk : rows;
        float s = 0.0f;
        for (long long r = r0; r < r1; ++r) {
            float v = a[r * d + j];
            if (mode == 1) {
                float t = v - b[j];
                s += t * t;
            } else if (mode == 2) {
                s += v * b[r * d + j];
            } else {
                s += v;
            }
        }
        part[i] = s;
    }
}

// out[j] = scale * sum over k < chunks of part[k, j], in chunk order.
KERNEL col_finish(const float* part, float* out, int chunks, int d, float scale) {
    EACH(j, d) {
        float s = 0.0f;
        for (long long k = 0; k < chunks; ++k) s += part[k * d + j];
        out[j] = s * scale;
    }
}

// v[j] (a sum of squared deviations over m rows) becomes r = (v/m + eps)^(-1/2).
KERNEL bn_rstd(float* v, int d, float inv_m, float eps) {
    EACH(j, d) { v[j] = 1.0f / sqrtf(v[j] * inv_m + eps); }
}

// xhat = (h - mean) * rstd, kept for the backward pass; h becomes gamma * xhat + beta.
KERNEL bn_forward(float* h, float* xhat, const float* mean, const float* rstd, const float* gamma,
                  const float* beta, long long total, int d) {
    EACH(i, total) {
        long long j = i % d;
        float x = (h[i] - mean[j]) * rstd[j];
        xhat[i] = x;
        h[i] = gamma[j] * x + beta[j];
    }
}

// dx of BatchNorm with statistics from the first m rows (batchnorm.rs):
// dx_i = r*gamma*dy_i - [i < m] * (r/m) * (gamma*dbeta + xhat_i * gamma*dgamma).
KERNEL bn_backward(float* dy, const float* xhat, const float* gamma, const float* rstd,
                   const float* dbeta, const float* dgamma, long long total, int d, long long m,
                   float inv_m) {
    EACH(i, total) {
        long long j = i % d;
        float v = dy[i] * (gamma[j] * rstd[j]);
        if (i / d < m) {
            float c = rstd[j] * inv_m;
            float sg = gamma[j] * dbeta[j];
            float sgx = gamma[j] * dgamma[j];
            v = v - c * (sg + xhat[i] * sgx);
        }
        dy[i] = v;
    }
}

// Activations in place; kind: 0 ReLU, 1 LeakyReLU (slope 0.01), 2 ELU, 3 tanh, 4 identity.
KERNEL act_forward(float* h, long long total, int kind) {
    EACH(i, total) {
        float v = h[i];
        if (kind == 0) h[i] = v > 0.0f ? v : 0.0f;
        else if (kind == 1) h[i] = v > 0.0f ? v : 0.01f * v;
        else if (kind == 2) h[i] = v > 0.0f ? v : expm1f(v);
        else if (kind == 3) h[i] = tanhf(v);
    }
}

// d = dl/da becomes dl/dh, from the activation's output a (activation.rs).
KERNEL act_backward(float* d, const float* a, long long total, int kind) {
    EACH(i, total) {
        float x = a[i];
        if (kind == 0) d[i] = x <= 0.0f ? 0.0f : d[i];
        else if (kind == 1) d[i] = x <= 0.0f ? d[i] * 0.01f : d[i];
        else if (kind == 2) d[i] = x <= 0.0f ? d[i] * (x + 1.0f) : d[i];
        else if (kind == 3) d[i] = d[i] * (1.0f - x * x);
    }
}

// a *= b elementwise (dropout masks).
KERNEL mul_inplace(float* a, const float* b, long long total) {
    EACH(i, total) { a[i] *= b[i]; }
}

// One AdamW step in double per element (adam_update.rs):
// m = b1 m + (1-b1) g, v = b2 v + (1-b2) g^2, p = p*keep - lr (m/bias1) / (sqrt(v/bias2) + eps).
KERNEL adam(float* p, const float* g, float* m, float* v, long long n, double b1, double b2,
            double lr, double eps, double bias1, double bias2, double keep) {
    EACH(i, n) {
        double gi = (double)g[i];
        double mn = b1 * (double)m[i] + (1.0 - b1) * gi;
        double vn = b2 * (double)v[i] + (1.0 - b2) * gi * gi;
        m[i] = (float)mn;
        v[i] = (float)vn;
        double theta = (double)p[i] * keep;
        p[i] = (float)(theta - lr * (mn / bias1) / (sqrt(vn / bias2) + eps));
    }
}

// flag[0] = 1 where some value is NaN or infinite (every writer writes the same 1).
KERNEL flag_nonfinite(const float* x, long long n, float* flag) {
    EACH(i, n) {
        if (!isfinite(x[i])) flag[0] = 1.0f;
    }
}

// The kernel sums' rows centred in place, z[r, :] -= mean, and their squared norms (summed in
// double, as the CPU's tiled pass does), one row per thread.
KERNEL center_rows(float* z, const float* mean, float* norms, int n, int d) {
    EACH(r, n) {
        double s = 0.0;
        for (long long j = 0; j < d; ++j) {
            float v = z[r * d + j] - mean[j];
            z[r * d + j] = v;
            s += (double)v * (double)v;
        }
        norms[r] = (float)s;
    }
}

// A tile of inner products D = Z_I Z_J^T (p x q) becomes the Gaussian
// K = exp(min(2D - |z_i|^2 - |z_j|^2, 0) / h) in place, as the CPU's `simd::gauss_tile` does;
// the squared norms of tile I start at na[oa], those of tile J at nb[ob].
KERNEL gauss(float* k, const float* na, const float* nb, int oa, int ob, int p, int q, float inv_h) {
    EACH(i, (long long)p * q) {
        long long r = i / q;
        long long c = i - r * q;
        float v = k[i];
        float e = ((v + v) - na[oa + r] - nb[ob + c]) * inv_h;
        k[i] = expf(fminf(e, 0.0f));
    }
}

// The kernel sums' gradient from its sums G (n x d, sum_j H_ij z_j) and r (n, sum_j H_ij):
// G becomes scale * (G - r o Z).
KERNEL grad_finish(float* g, const float* z, const float* r, int n, int d, float scale) {
    EACH(i, (long long)n * d) {
        long long row = i / d;
        g[i] = scale * (g[i] - r[row] * z[i]);
    }
}

// Rows in another order: dst[r, :] = src[idx[r], :] (d wide), or zeros where idx[r] is negative
// or past src's n_src rows. The indices are floats (exact below 2^24; the caller refuses more),
// so that every buffer of the kernels stays a float buffer. The kernel sums sort one-hot rows
// by class with it, and put their gradients back in the caller's order.
KERNEL gather_rows(float* dst, const float* src, const float* idx, int n, int d, int n_src) {
    EACH(i, (long long)n * d) {
        long long r = i / d;
        long long j = i - r * d;
        float f = idx[r];
        long long s = (long long)f;
        dst[i] = (f >= 0.0f && s < n_src) ? src[s * d + j] : 0.0f;
    }
}

// dst[idx[r], :] += scale * src[r, :] for the n rows of src (d wide), skipping negative
// indices and those past dst's n_dst rows. The caller's indices are distinct (checked on the
// host), so no two threads add into one value. Kernel terms add their gradient on the kept
// pass's rows into dL/dZ with it.
KERNEL scatter_add_rows(float* dst, const float* src, const float* idx, int n, int d, int n_dst, float scale) {
    EACH(i, (long long)n * d) {
        long long r = i / d;
        long long j = i - r * d;
        float f = idx[r];
        long long s = (long long)f;
        if (f >= 0.0f && s < n_dst) dst[s * d + j] += scale * src[i];
    }
}
