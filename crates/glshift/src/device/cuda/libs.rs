//! Which CUDA libraries a GPU run uses, checked before they are used.
//!
//! The build targets one CUDA version ([`TARGET`], cudarc's `cuda-13000` feature): its driver
//! API, cuBLAS 13 and NVRTC 13. cudarc loads the driver and cuBLAS itself, trying unversioned
//! names (`libcublas.so`) before the versioned one (`libcublas.so.13`), so a development link of
//! another CUDA version earlier on the loader's path would be the one it uses. The library it
//! will open is therefore opened here first, in cudarc's order, and refused, with its file and
//! version named, where it is not CUDA 13's. NVRTC is opened by glshift (`nvrtc`), the
//! versioned name first.

use std::ffi::c_void;
use std::path::PathBuf;

use libloading::Library;

/// The CUDA version the build targets: cudarc's `cuda-13000` feature (workspace Cargo.toml).
pub(crate) const TARGET: (i32, i32) = (13, 0);

/// `lib`'s file name with the target's major version: `libnvrtc.so.13` on Linux.
pub(crate) fn versioned_name(lib: &str) -> String {
    use std::env::consts::{DLL_PREFIX, DLL_SUFFIX};
    format!("{DLL_PREFIX}{lib}{DLL_SUFFIX}.{}", TARGET.0)
}

/// A loader error with its cause (libloading's own message is only "dlopen failed").
pub(crate) fn describe(e: &libloading::Error) -> String {
    match std::error::Error::source(e) {
        Some(cause) => format!("{e}: {cause}"),
        None => e.to_string(),
    }
}

/// `names` without repeats, in their order (cudarc's lists repeat some names).
pub(crate) fn distinct(names: impl IntoIterator<Item = String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for n in names {
        if !out.contains(&n) {
            out.push(n);
        }
    }
    out
}

/// The file of the shared library holding `addr` (a function of it), where the loader says.
#[cfg(unix)]
pub(crate) fn file_of(addr: *const c_void) -> Option<PathBuf> {
    // SAFETY: dladdr only reads the loader's tables; `info` is plain data it fills.
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    if unsafe { libc::dladdr(addr, &mut info) } == 0 || info.dli_fname.is_null() {
        return None;
    }
    // SAFETY: non-null: a NUL-terminated path owned by the loader.
    let name = unsafe { std::ffi::CStr::from_ptr(info.dli_fname) };
    Some(PathBuf::from(name.to_string_lossy().into_owned()))
}

#[cfg(not(unix))]
pub(crate) fn file_of(_addr: *const c_void) -> Option<PathBuf> {
    None
}

/// `"a.b"` of a CUDA version number such as 13000 (the driver's encoding: 1000·major + 10·minor).
pub(crate) fn split_version(v: i32) -> (i32, i32) {
    (v / 1000, (v % 1000) / 10)
}

/// The CUDA version the driver supports, e.g. (13, 0).
pub(crate) fn driver_version() -> Result<(i32, i32), String> {
    let mut v = 0;
    // SAFETY: writes one int; needs no initialised driver.
    let status = unsafe { cudarc::driver::sys::cuDriverGetVersion(&mut v) };
    if status != cudarc::driver::sys::cudaError_enum::CUDA_SUCCESS {
        return Err(format!("cuDriverGetVersion: {status:?}"));
    }
    Ok(split_version(v))
}

/// Refuses a driver older than the target: cuBLAS 13 and the 13.0 driver API need one for
/// CUDA 13.0 or newer.
pub(crate) fn check_driver(driver: (i32, i32)) -> Result<(), String> {
    if driver < TARGET {
        return Err(format!(
            "the CUDA driver supports CUDA {}.{}; this build targets CUDA {}.{} and needs a \
             driver for CUDA {}.{} or newer",
            driver.0, driver.1, TARGET.0, TARGET.1, TARGET.0, TARGET.1
        ));
    }
    Ok(())
}

/// Checks the cuBLAS cudarc will load (the first of its names that the loader opens) before
/// cudarc opens it: where it is found; an error naming the file and its version where it is
/// not cuBLAS 13, or naming every name tried where none opens.
pub(crate) fn check_cublas() -> Result<String, String> {
    check_cublas_among(&distinct(cudarc::get_lib_name_candidates("cublas")))
}

/// [`check_cublas`] where cudarc would try `names` in this order.
fn check_cublas_among(names: &[String]) -> Result<String, String> {
    use cudarc::cublas::sys::{cublasStatus_t, libraryPropertyType};
    type GetProperty = unsafe extern "C" fn(libraryPropertyType, *mut i32) -> cublasStatus_t;
    for name in names {
        // SAFETY: opening cuBLAS runs its initialisers, as cudarc's opening of it would.
        let Ok(lib) = (unsafe { Library::new(name) }) else { continue };
        // SAFETY: cublasGetProperty has this C signature in every cuBLAS since 7.5.
        let get = unsafe { lib.get::<GetProperty>(b"cublasGetProperty") }
            .map(|s| *s)
            .map_err(|e| format!("cuBLAS {name} has no cublasGetProperty ({})", describe(&e)))?;
        let (mut major, mut minor) = (0, 0);
        // SAFETY: each call writes one int.
        let ok = unsafe {
            get(libraryPropertyType::MAJOR_VERSION, &mut major)
                == cublasStatus_t::CUBLAS_STATUS_SUCCESS
                && get(libraryPropertyType::MINOR_VERSION, &mut minor)
                    == cublasStatus_t::CUBLAS_STATUS_SUCCESS
        };
        let file = file_of(get as *const c_void).map_or(name.clone(), |p| p.display().to_string());
        if !ok {
            return Err(format!("cuBLAS {file}: cublasGetProperty failed"));
        }
        if major != TARGET.0 {
            return Err(format!(
                "the cuBLAS found first, {name} ({file}), is cuBLAS {major}.{minor}, not CUDA \
                 {}'s: cudarc opens the first of {} that the loader finds, unversioned names \
                 first; take {file}'s folder off LD_LIBRARY_PATH, or put ahead of it a folder \
                 holding {} and a libcublas.so link to it",
                TARGET.0,
                names.join(", "),
                versioned_name("cublas"),
            ));
        }
        return Ok(format!("cuBLAS {major}.{minor} ({file})"));
    }
    Err(format!(
        "cuBLAS for CUDA {} ({}) not found: tried {} on the loader's path (LD_LIBRARY_PATH, \
         then the system's)",
        TARGET.0,
        versioned_name("cublas"),
        names.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stand-in cuBLAS of version `major.minor` (only `cublasGetProperty`), built by the
    /// host C compiler into `dir`; `None` without one.
    fn fake_cublas(dir: &std::path::Path, major: i32, minor: i32) -> Option<String> {
        let src = dir.join(format!("cublas{major}.c"));
        let out = dir.join(format!("libcublas.so.{major}"));
        let body = format!(
            "int cublasGetProperty(int type, int *value) {{ \
             *value = type == 0 ? {major} : type == 1 ? {minor} : 0; return 0; }}"
        );
        std::fs::write(&src, body).ok()?;
        let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
        let run = std::process::Command::new(&cc)
            .args(["-shared", "-fPIC", "-o"])
            .arg(&out)
            .arg(&src)
            .output();
        match run {
            Ok(r) if r.status.success() => Some(out.display().to_string()),
            _ => {
                eprintln!("skipped: no C compiler ({cc})");
                None
            }
        }
    }

    /// The cuBLAS cudarc would open is the first of its names that opens, and is refused,
    /// named with its file and version, where it is not the target's; names that do not open
    /// are passed over; none at all names every name tried.
    #[test]
    fn the_cublas_cudarc_would_open_is_checked_first() {
        let dir = tempfile::tempdir().unwrap();
        let Some(old) = fake_cublas(dir.path(), 12, 9) else { return };
        let Some(new) = fake_cublas(dir.path(), TARGET.0, 2) else { return };
        let missing = dir.path().join("libcublas.so").display().to_string();

        let ok = check_cublas_among(&[missing.clone(), new.clone(), old.clone()]).unwrap();
        assert!(ok.contains(&format!("cuBLAS {}.2", TARGET.0)) && ok.contains(&new), "{ok}");
        let e = check_cublas_among(&[missing.clone(), old.clone(), new.clone()]).unwrap_err();
        assert!(e.contains("cuBLAS 12.9") && e.contains(&old) && e.contains(&missing), "{e}");
        let e = check_cublas_among(std::slice::from_ref(&missing)).unwrap_err();
        assert!(e.contains("not found") && e.contains(&missing), "{e}");
    }

    #[test]
    fn driver_versions_are_read_and_an_old_driver_is_refused() {
        assert_eq!(split_version(13000), (13, 0));
        assert_eq!(split_version(12040), (12, 4));
        assert_eq!(check_driver(TARGET), Ok(()));
        assert_eq!(check_driver((TARGET.0, TARGET.1 + 2)), Ok(()));
        let e = check_driver((12, 9)).unwrap_err();
        assert!(e.contains("CUDA 12.9") && e.contains(&format!("CUDA {}.{}", TARGET.0, TARGET.1)));
    }

    /// [`TARGET`] is the version of cudarc's feature in the workspace's Cargo.toml.
    #[test]
    fn the_target_is_cudarcs_feature() {
        let toml =
            std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../Cargo.toml"))
                .expect("the workspace's Cargo.toml");
        let feature = format!("\"cuda-{}{:03}\"", TARGET.0, TARGET.1 * 10);
        let line = toml.lines().find(|l| l.starts_with("cudarc =")).expect("cudarc's line");
        assert!(line.contains(&feature), "{feature} not in {line}");
    }
}
