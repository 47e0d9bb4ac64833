//! The GPU's kernels (`kernels.cu`), compiled by NVRTC when the GPU is first used (no CUDA
//! toolkit at build time): a cubin for the device found where NVRTC knows its architecture
//! ([`plan`]), loaded into its context and launched through [`super::Backend`].

use std::sync::Arc;

use cudarc::driver::{CudaContext, CudaFunction};
use cudarc::nvrtc::Ptx;

use super::nvrtc::{Compiled, Nvrtc, Output};

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
    /// What was loaded, for messages: e.g. "a cubin for sm_90 from NVRTC 13.0 (path)".
    pub(super) built: String,
}

/// NVRTC's options for the kernels, besides the architecture. Multiply-adds are not contracted
/// into FMA (NVRTC contracts by default), so that each kernel rounds as its C source reads: as
/// the host build of the CPU tests (`kernels_host`) and, for AdamW, as `Adam::step`, bit for
/// bit. The library functions `expf`, `expm1f` and `tanhf` (of `gauss` and `act_forward`) use
/// FMA inside whatever the option says; the others hold no FMA instruction (checked by
/// `tests::kernels_compile_with_nvrtc`). The rest are NVRTC's defaults, named because the
/// host build's IEEE rounding depends on them: denormals kept, IEEE division and square root.
pub(super) const OPTIONS: [&str; 4] =
    ["--fmad=false", "--ftz=false", "--prec-div=true", "--prec-sqrt=true"];

/// How the kernels are built for one device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Build {
    /// A cubin for the device's architecture `sm_XY`: machine code, nothing left to the driver.
    Cubin(u32),
    /// PTX for `compute_XY` (the newest architecture NVRTC knows below the device's), which
    /// the driver compiles when it loads it.
    Ptx(u32),
}

impl std::fmt::Display for Build {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Build::Cubin(a) => write!(f, "a cubin for sm_{a}"),
            Build::Ptx(a) => write!(f, "PTX for compute_{a}"),
        }
    }
}

/// `(major, minor)` as "major.minor".
fn v((major, minor): (i32, i32)) -> String {
    format!("{major}.{minor}")
}

/// How NVRTC `nvrtc` (compiling for `archs`) builds the kernels for a device of compute
/// capability `device` under a driver for CUDA `driver`; or one error naming both versions.
///
/// A cubin for the device's own architecture where NVRTC knows it: a driver of the same or a
/// newer major version loads it, whichever minor versions the two are (CUDA's minor version
/// compatibility). Else PTX for the newest architecture below the device's: the driver reads
/// only the PTX of its own CUDA version or older (NVRTC 13.5 emits PTX ISA 9.5, a driver for
/// 13.0 reads up to 9.0), so NVRTC must not be newer than the driver.
pub(super) fn plan(
    nvrtc: (i32, i32),
    archs: &[u32],
    driver: (i32, i32),
    device: (i32, i32),
) -> Result<Build, String> {
    if nvrtc.0 > driver.0 {
        return Err(format!(
            "NVRTC {} is newer than the CUDA driver ({}): the driver cannot load what it \
             compiles; use NVRTC {}.x or a newer driver",
            v(nvrtc),
            v(driver),
            driver.0
        ));
    }
    let arch = u32::try_from(device.0 * 10 + device.1)
        .map_err(|_| format!("compute capability {}", v(device)))?;
    if archs.contains(&arch) {
        return Ok(Build::Cubin(arch));
    }
    let Some(&below) = archs.iter().filter(|&&a| a < arch).max() else {
        return Err(format!(
            "the GPU's architecture sm_{arch} is older than any NVRTC {} compiles for ({})",
            v(nvrtc),
            archs.iter().map(|a| format!("sm_{a}")).collect::<Vec<_>>().join(", ")
        ));
    };
    if nvrtc > driver {
        return Err(format!(
            "NVRTC {} does not know the GPU's architecture sm_{arch}, and the PTX it emits \
             for the driver to compile needs a driver for CUDA {} or newer; the driver is for \
             CUDA {}: use NVRTC {} or older, or a newer driver",
            v(nvrtc),
            v(nvrtc),
            v(driver),
            v(driver)
        ));
    }
    Ok(Build::Ptx(below))
}

/// [`SOURCE`] compiled by `nvrtc` as `build` says, with [`OPTIONS`] and `extra` options.
pub(super) fn compile(nvrtc: &Nvrtc, build: Build, extra: &[&str]) -> Result<Compiled, String> {
    let (arch, output) = match build {
        Build::Cubin(a) => (format!("--gpu-architecture=sm_{a}"), Output::Cubin),
        Build::Ptx(a) => (format!("--gpu-architecture=compute_{a}"), Output::Ptx),
    };
    let options: Vec<String> =
        OPTIONS.iter().chain(extra).map(|o| o.to_string()).chain([arch]).collect();
    nvrtc.compile(SOURCE, "kernels.cu", &options, output)
}

impl Kernels {
    /// Compiles the kernels for `ctx`'s device with `nvrtc` (driver for CUDA `driver`) and
    /// loads them.
    pub(super) fn load(
        ctx: &Arc<CudaContext>,
        nvrtc: &Nvrtc,
        driver: (i32, i32),
    ) -> Result<Kernels, String> {
        let device = ctx.compute_capability().map_err(|e| format!("compute capability: {e}"))?;
        let build = plan(nvrtc.version, &nvrtc.supported_archs()?, driver, device)?;
        let built = format!("{build} from NVRTC {} ({})", v(nvrtc.version), nvrtc.found);
        let image = compile(nvrtc, build, &[])?.image;
        let module = ctx.load_module(Ptx::from_binary(image)).map_err(|e| {
            format!("loading the kernels ({built}; driver for CUDA {}): {e}", v(driver))
        })?;
        let fns = K::ALL.iter().map(|k| {
            module.load_function(k.name()).map_err(|e| format!("kernel {}: {e}", k.name()))
        });
        Ok(Kernels { fns: fns.collect::<Result<_, _>>()?, built })
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
    use super::*;
    use crate::device::cuda::libs::TARGET;

    /// Set to `1` (CI does), a missing NVRTC fails [`kernels_compile_with_nvrtc`] instead of
    /// skipping it, and NVRTC must be the target's version.
    const REQUIRE_ENV: &str = "GLSHIFT_REQUIRE_NVRTC";

    /// The newest PTX ISA a driver for the target CUDA version reads: PTX ISA 9.0 is CUDA
    /// 13.0's.
    const TARGET_PTX_ISA: (u32, u32) = (9, 0);

    /// The kernels whose source calls `expf`, `expm1f` or `tanhf`: CUDA's implementations of
    /// those use FMA whatever `--fmad` says.
    const LIBRARY_FMA: [K; 2] = [K::ActForward, K::Gauss];

    /// The `.version` of PTX text.
    fn ptx_isa(ptx: &str) -> (u32, u32) {
        let line = ptx.lines().find_map(|l| l.trim().strip_prefix(".version ")).expect(".version");
        let (a, b) = line.trim().split_once('.').expect("major.minor");
        (a.parse().expect("major"), b.parse().expect("minor"))
    }

    /// Each entry's PTX, from its `.entry` line to the next.
    fn entries(ptx: &str) -> Vec<(String, String)> {
        let mut out: Vec<(String, String)> = Vec::new();
        for line in ptx.lines() {
            if let Some(rest) = line.split(".entry ").nth(1) {
                let name = rest.split(|c: char| c == '(' || c.is_whitespace()).next().unwrap();
                out.push((name.to_string(), String::new()));
            } else if let Some((_, body)) = out.last_mut() {
                body.push_str(line);
                body.push('\n');
            }
        }
        out
    }

    /// The kernels compile with the NVRTC found (no GPU needed): PTX, as for a device newer
    /// than NVRTC, holding every kernel of [`K::ALL`], of an ISA version the target's driver
    /// reads (checked where NVRTC is the target's version, as CI installs it), with no FMA
    /// where the source has none; and a cubin for sm_90, ptxas's resource use printed, no
    /// spills. Skipped without NVRTC, unless [`REQUIRE_ENV`] is set (CI): then it fails.
    #[test]
    fn kernels_compile_with_nvrtc() {
        let required = std::env::var(REQUIRE_ENV).is_ok_and(|v| v == "1");
        let nvrtc = match Nvrtc::open() {
            Ok(nvrtc) => nvrtc,
            Err(why) if required => panic!("{REQUIRE_ENV}=1 and no NVRTC: {why}"),
            Err(why) => return eprintln!("skipped: {why}"),
        };
        println!("NVRTC {} ({})", v(nvrtc.version), nvrtc.found);
        if required {
            assert_eq!(nvrtc.version, TARGET, "NVRTC of the CUDA version the build targets");
        }
        let archs = nvrtc.supported_archs().expect("the architectures");
        assert!(archs.contains(&90), "sm_90 among {archs:?}");

        let ptx = compile(&nvrtc, Build::Ptx(archs[0]), &[]).expect("the kernels compile").text();
        let isa = ptx_isa(&ptx);
        println!("PTX ISA {}.{} for compute_{}", isa.0, isa.1, archs[0]);
        if nvrtc.version <= TARGET {
            assert!(
                isa <= TARGET_PTX_ISA,
                "PTX ISA {isa:?} from NVRTC {}: a driver for CUDA {} reads up to {TARGET_PTX_ISA:?}",
                v(nvrtc.version),
                v(TARGET)
            );
        }
        let entries = entries(&ptx);
        for k in K::ALL {
            let (_, body) = entries
                .iter()
                .find(|(name, _)| name == k.name())
                .unwrap_or_else(|| panic!("PTX lacks {}", k.name()));
            if !LIBRARY_FMA.contains(&k) {
                assert!(!body.contains("fma."), "{} holds an FMA despite --fmad=false", k.name());
            }
        }
        assert_eq!(entries.len(), K::ALL.len(), "entries {entries:?}");

        let cubin = compile(&nvrtc, Build::Cubin(90), &["--ptxas-options=-v"]).expect("a cubin");
        println!("ptxas for sm_90:\n{}", cubin.log.trim_end());
        for k in K::ALL {
            let entry = format!("Compiling entry function '{}' for 'sm_90'", k.name());
            assert!(cubin.log.contains(&entry), "ptxas's report lacks {}", k.name());
            assert!(
                cubin.image.windows(k.name().len()).any(|w| w == k.name().as_bytes()),
                "the cubin lacks {}",
                k.name()
            );
        }
        let spills: Vec<&str> = cubin
            .log
            .lines()
            .filter(|l| {
                l.contains("spill") && !l.contains(" 0 bytes spill stores, 0 bytes spill loads")
            })
            .collect();
        assert!(spills.is_empty(), "register spills: {spills:?}");
    }

    /// A cubin for the device where NVRTC knows its architecture, whatever the minor versions;
    /// else PTX for the newest architecture below it, which a driver older than NVRTC cannot
    /// read: one error naming both versions. A newer NVRTC major, or a device older than
    /// every architecture NVRTC knows, is an error.
    #[test]
    fn the_build_suits_the_device_and_the_driver() {
        let archs = [75, 80, 86, 89, 90, 100, 120];
        assert_eq!(plan((13, 5), &archs, (13, 0), (9, 0)), Ok(Build::Cubin(90)));
        assert_eq!(plan((13, 0), &archs, (13, 2), (13, 0)), Ok(Build::Ptx(120)));
        assert_eq!(plan((13, 0), &archs, (13, 0), (8, 7)), Ok(Build::Ptx(86)));
        let e = plan((13, 5), &archs, (13, 0), (13, 0)).unwrap_err();
        assert!(e.contains("NVRTC 13.5") && e.contains("CUDA 13.0") && e.contains("sm_130"), "{e}");
        let e = plan((14, 0), &archs, (13, 0), (9, 0)).unwrap_err();
        assert!(e.contains("NVRTC 14.0") && e.contains("(13.0)"), "{e}");
        let e = plan((13, 0), &archs, (13, 0), (6, 1)).unwrap_err();
        assert!(e.contains("sm_61") && e.contains("sm_75"), "{e}");
    }
}
