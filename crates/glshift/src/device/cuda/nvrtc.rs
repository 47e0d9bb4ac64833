//! NVRTC, opened by glshift itself rather than through cudarc, so that the library of the CUDA
//! version the build targets is preferred over whatever an unversioned name finds, every name
//! tried is named when none fits, and the compiler's options (architecture, no FMA contraction,
//! verbose ptxas) and output (PTX or a cubin) are chosen here.
//!
//! Lookup: the file `GLSHIFT_NVRTC` names, where set; else `libnvrtc.so.13` on the loader's
//! path, then cudarc's names for NVRTC, the first whose `nvrtcVersion` is CUDA 13's. NVRTC
//! opens its builtins library (`libnvrtc-builtins.so.13.0`) by name when it compiles, and the
//! pip wheel's copy has no RPATH, so the builtins beside the library found are opened first:
//! the loader then finds them by their SONAME, whatever LD_LIBRARY_PATH says.

use std::ffi::{c_char, c_int, CStr, CString};
use std::path::{Path, PathBuf};

use libloading::Library;

use super::libs::{self, TARGET};

/// The variable naming the NVRTC library file to use.
pub(crate) const PATH_ENV: &str = "GLSHIFT_NVRTC";

type Program = *mut std::ffi::c_void;
/// `nvrtcResult` (a C enum: 0 is success).
type Status = c_int;

/// NVRTC's functions, read from the library when it is opened.
#[derive(Clone, Copy)]
struct Fns {
    version: unsafe extern "C" fn(*mut c_int, *mut c_int) -> Status,
    error_string: unsafe extern "C" fn(Status) -> *const c_char,
    num_archs: unsafe extern "C" fn(*mut c_int) -> Status,
    archs: unsafe extern "C" fn(*mut c_int) -> Status,
    create: unsafe extern "C" fn(
        *mut Program,
        *const c_char,
        *const c_char,
        c_int,
        *const *const c_char,
        *const *const c_char,
    ) -> Status,
    compile: unsafe extern "C" fn(Program, c_int, *const *const c_char) -> Status,
    log_size: unsafe extern "C" fn(Program, *mut usize) -> Status,
    log: unsafe extern "C" fn(Program, *mut c_char) -> Status,
    ptx_size: unsafe extern "C" fn(Program, *mut usize) -> Status,
    ptx: unsafe extern "C" fn(Program, *mut c_char) -> Status,
    cubin_size: unsafe extern "C" fn(Program, *mut usize) -> Status,
    cubin: unsafe extern "C" fn(Program, *mut c_char) -> Status,
    destroy: unsafe extern "C" fn(*mut Program) -> Status,
}

/// An opened NVRTC.
pub(crate) struct Nvrtc {
    fns: Fns,
    /// Where it was found: the file the loader opened, or the name where that is unknown.
    pub(crate) found: String,
    /// NVRTC's (major, minor) version.
    pub(crate) version: (i32, i32),
    // The function pointers above stay valid while these are open; NVRTC is closed first.
    _lib: Library,
    _builtins: Option<Library>,
}

/// What [`Nvrtc::compile`] returns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Output {
    /// PTX text (NUL-terminated, as the driver's loader reads it).
    Ptx,
    /// A cubin: machine code for one architecture.
    Cubin,
}

/// A compiled program: its image and NVRTC's log (ptxas's report with `--ptxas-options=-v`).
pub(crate) struct Compiled {
    pub(crate) image: Vec<u8>,
    #[cfg_attr(not(test), allow(dead_code))] // printed by the compile test
    pub(crate) log: String,
}

impl Compiled {
    /// The image as text (PTX), up to its terminating NUL.
    #[cfg(test)]
    pub(crate) fn text(&self) -> String {
        let end = self.image.iter().position(|&b| b == 0).unwrap_or(self.image.len());
        String::from_utf8_lossy(&self.image[..end]).into_owned()
    }
}

/// Destroys the program when dropped (a failure to destroy is ignored: nothing is left to do).
struct ProgramGuard<'a>(Program, &'a Fns);

impl Drop for ProgramGuard<'_> {
    fn drop(&mut self) {
        // SAFETY: the program was created by this NVRTC and is destroyed once.
        unsafe { (self.1.destroy)(&mut self.0) };
    }
}

impl Nvrtc {
    /// NVRTC for the CUDA major version the build targets, found as the module's header says,
    /// or why there is none, naming every library tried.
    pub(crate) fn open() -> Result<Nvrtc, String> {
        if let Some(path) = std::env::var_os(PATH_ENV).filter(|p| !p.is_empty()) {
            let path = PathBuf::from(path);
            let nvrtc = Nvrtc::open_as(path.as_os_str())
                .map_err(|e| format!("{PATH_ENV}={}: {e}", path.display()))?;
            return nvrtc
                .of_the_target()
                .map_err(|e| format!("{PATH_ENV}={}: {e}", path.display()));
        }
        let first = libs::versioned_name("nvrtc");
        let names =
            libs::distinct(std::iter::once(first).chain(cudarc::get_lib_name_candidates("nvrtc")));
        let mut refused = Vec::new();
        for name in &names {
            // A name the loader cannot open is only listed as tried.
            let Ok(nvrtc) = Nvrtc::open_as(name.as_ref()) else { continue };
            match nvrtc.of_the_target() {
                Ok(nvrtc) => return Ok(nvrtc),
                Err(why) => refused.push(format!("{name}: {why}")),
            }
        }
        let refused = if refused.is_empty() {
            String::new()
        } else {
            format!("; found but refused: {}", refused.join("; "))
        };
        Err(format!(
            "NVRTC for CUDA {} not found: tried {} on the loader's path (LD_LIBRARY_PATH, then \
             the system's){refused}; or set {PATH_ENV} to the library file (e.g. \
             libnvrtc.so.{} of the pip package nvidia-cuda-nvrtc {}.*)",
            TARGET.0,
            names.join(", "),
            TARGET.0,
            TARGET.0,
        ))
    }

    /// `self` where its major version is the target's, else why not.
    fn of_the_target(self) -> Result<Nvrtc, String> {
        if self.version.0 != TARGET.0 {
            return Err(format!(
                "NVRTC {}.{} ({}), not CUDA {}'s",
                self.version.0, self.version.1, self.found, TARGET.0
            ));
        }
        Ok(self)
    }

    /// Opens `name` (a file name for the loader's search, or a path) as NVRTC.
    fn open_as(name: &std::ffi::OsStr) -> Result<Nvrtc, String> {
        // SAFETY: opening NVRTC runs its initialisers, which only set up the library.
        let lib = unsafe { Library::new(name) }
            .map_err(|e| format!("cannot be opened ({})", libs::describe(&e)))?;
        let fns = read_fns(&lib)?;
        let (mut major, mut minor) = (0, 0);
        // SAFETY: nvrtcVersion writes two ints.
        check(&fns, unsafe { (fns.version)(&mut major, &mut minor) }, "nvrtcVersion")?;
        let file = libs::file_of(fns.version as *const std::ffi::c_void);
        let found = file
            .as_ref()
            .map_or_else(|| name.to_string_lossy().into_owned(), |p| p.display().to_string());
        let builtins = file.as_deref().and_then(|f| open_builtins(f, (major, minor)));
        Ok(Nvrtc { fns, found, version: (major, minor), _lib: lib, _builtins: builtins })
    }

    /// The architectures this NVRTC compiles for (`sm_XY` as `XY`), ascending.
    pub(crate) fn supported_archs(&self) -> Result<Vec<u32>, String> {
        let mut n: c_int = 0;
        // SAFETY: writes one int.
        check(&self.fns, unsafe { (self.fns.num_archs)(&mut n) }, "nvrtcGetNumSupportedArchs")?;
        let mut archs = vec![0 as c_int; n.max(0) as usize];
        // SAFETY: writes `n` ints, the length just reported.
        check(
            &self.fns,
            unsafe { (self.fns.archs)(archs.as_mut_ptr()) },
            "nvrtcGetSupportedArchs",
        )?;
        let mut archs: Vec<u32> = archs.into_iter().filter_map(|a| u32::try_from(a).ok()).collect();
        archs.sort_unstable();
        Ok(archs)
    }

    /// Compiles `src` (named `name` in messages) with `options` into `output`; a failure
    /// carries NVRTC's log.
    pub(crate) fn compile(
        &self,
        src: &str,
        name: &str,
        options: &[String],
        output: Output,
    ) -> Result<Compiled, String> {
        let f = &self.fns;
        let c = |s: &str| CString::new(s).map_err(|_| format!("a NUL byte in {s:?}"));
        let (src_c, name_c) = (c(src)?, c(name)?);
        let opts = options.iter().map(|o| c(o)).collect::<Result<Vec<_>, _>>()?;
        let opt_ptrs: Vec<*const c_char> = opts.iter().map(|o| o.as_ptr()).collect();
        let mut prog: Program = std::ptr::null_mut();
        // SAFETY: the strings are NUL-terminated and outlive the call; no headers.
        let status = unsafe {
            (f.create)(
                &mut prog,
                src_c.as_ptr(),
                name_c.as_ptr(),
                0,
                std::ptr::null(),
                std::ptr::null(),
            )
        };
        check(f, status, "nvrtcCreateProgram")?;
        let prog = ProgramGuard(prog, f);
        let n_opts = c_int::try_from(opt_ptrs.len()).map_err(|_| "too many NVRTC options")?;
        // SAFETY: `n_opts` NUL-terminated options that outlive the call.
        let status = unsafe { (f.compile)(prog.0, n_opts, opt_ptrs.as_ptr()) };
        let log = read(f, prog.0, f.log_size, f.log, "the program log")
            .map(|b| {
                let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
                String::from_utf8_lossy(&b[..end]).into_owned()
            })
            .unwrap_or_default();
        if status != 0 {
            return Err(format!(
                "NVRTC {}.{} ({}) could not compile {name} with {}: {}\n{log}",
                self.version.0,
                self.version.1,
                self.found,
                options.join(" "),
                error_string(f, status),
            ));
        }
        let image = match output {
            Output::Ptx => read(f, prog.0, f.ptx_size, f.ptx, "the PTX")?,
            Output::Cubin => read(f, prog.0, f.cubin_size, f.cubin, "the cubin")?,
        };
        if image.iter().all(|&b| b == 0) {
            return Err(format!("NVRTC produced no {output:?} for {name} (options {options:?})"));
        }
        Ok(Compiled { image, log })
    }
}

/// Every function of [`Fns`], or the first missing one named.
fn read_fns(lib: &Library) -> Result<Fns, String> {
    fn get<T: Copy>(lib: &Library, name: &str) -> Result<T, String> {
        // SAFETY: each name below is read with its C signature in NVRTC's header.
        unsafe { lib.get::<T>(name.as_bytes()) }
            .map(|s| *s)
            .map_err(|e| format!("no {name} in the library ({})", libs::describe(&e)))
    }
    Ok(Fns {
        version: get(lib, "nvrtcVersion")?,
        error_string: get(lib, "nvrtcGetErrorString")?,
        num_archs: get(lib, "nvrtcGetNumSupportedArchs")?,
        archs: get(lib, "nvrtcGetSupportedArchs")?,
        create: get(lib, "nvrtcCreateProgram")?,
        compile: get(lib, "nvrtcCompileProgram")?,
        log_size: get(lib, "nvrtcGetProgramLogSize")?,
        log: get(lib, "nvrtcGetProgramLog")?,
        ptx_size: get(lib, "nvrtcGetPTXSize")?,
        ptx: get(lib, "nvrtcGetPTX")?,
        cubin_size: get(lib, "nvrtcGetCUBINSize")?,
        cubin: get(lib, "nvrtcGetCUBIN")?,
        destroy: get(lib, "nvrtcDestroyProgram")?,
    })
}

/// The builtins library of NVRTC `version` beside `nvrtc`, opened, where it is there.
fn open_builtins(nvrtc: &Path, (major, minor): (i32, i32)) -> Option<Library> {
    use std::env::consts::{DLL_PREFIX, DLL_SUFFIX};
    let file =
        nvrtc.parent()?.join(format!("{DLL_PREFIX}nvrtc-builtins{DLL_SUFFIX}.{major}.{minor}"));
    // SAFETY: NVRTC would open the same library itself; its initialisers only set it up.
    file.is_file().then(|| unsafe { Library::new(&file) }.ok()).flatten()
}

fn error_string(f: &Fns, status: Status) -> String {
    // SAFETY: NVRTC returns a static NUL-terminated string for any status, or null.
    let s = unsafe { (f.error_string)(status) };
    if s.is_null() {
        return format!("NVRTC error {status}");
    }
    // SAFETY: non-null: a static NUL-terminated string.
    unsafe { CStr::from_ptr(s) }.to_string_lossy().into_owned()
}

fn check(f: &Fns, status: Status, call: &str) -> Result<(), String> {
    if status == 0 {
        Ok(())
    } else {
        Err(format!("{call}: {}", error_string(f, status)))
    }
}

/// A buffer NVRTC fills after reporting its size (the log, the PTX, the cubin).
fn read(
    f: &Fns,
    prog: Program,
    size: unsafe extern "C" fn(Program, *mut usize) -> Status,
    fill: unsafe extern "C" fn(Program, *mut c_char) -> Status,
    what: &str,
) -> Result<Vec<u8>, String> {
    let mut n = 0usize;
    // SAFETY: writes one size_t.
    check(f, unsafe { size(prog, &mut n) }, what)?;
    let mut buf = vec![0u8; n];
    if n > 0 {
        // SAFETY: writes the `n` bytes just reported.
        check(f, unsafe { fill(prog, buf.as_mut_ptr().cast()) }, what)?;
    }
    Ok(buf)
}
