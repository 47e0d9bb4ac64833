//! Reading a `.npy` feature matrix a block of rows at a time, so that memory is set by the
//! block, not by the file: `glshift predict` streams 1M-row files through it, and the loaders
//! read whole files through it into one array (no second copy of the file's bytes).
//!
//! The header is parsed once and the file's length is checked against the header's shape
//! before any data is read, so a truncated file is an error naming it, never a short read
//! halfway through. Values are converted to f32 exactly as the whole-file reader
//! ([`super::npy::parse_features`]) converts them: floats with `as f32`, integers through
//! i64 (u64 directly), so both readers give identical bits.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use ndarray::{Array2, ArrayViewMut1, ArrayViewMut2, Axis};
use ndarray_npy::npy::header::Header;

use super::npy_header::{check_header_depth, declared_header_len};
use crate::{Error, Result};

/// Rows per block of [`NpyRows::read_all`] and of `glshift predict` (8192 rows × 2048 f32 =
/// 64 MiB: large enough that per-block overheads vanish, small next to any model's needs).
pub const CHUNK_ROWS: usize = 8192;

/// How the file stores one value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Float,
    Signed,
    Unsigned,
}

/// Where and how a `.npy` file of shape `n × d` stores its values: what [`open_npy`] read
/// from its header, after checking the file's length against it.
#[derive(Clone, Copy, Debug)]
pub(super) struct NpyLayout {
    pub n: usize,
    pub d: usize,
    kind: Kind,
    /// Bytes per value: 1, 2, 4 or 8.
    pub size: usize,
    big_endian: bool,
    pub fortran: bool,
    /// Byte offset of the first value.
    pub data_start: u64,
}

impl NpyLayout {
    /// Whether the file stores f32 in this machine's byte order: its bytes are the values.
    pub fn native_f32(&self) -> bool {
        self.kind == Kind::Float && self.size == 4 && self.big_endian == cfg!(target_endian = "big")
    }

    /// Converts `bytes` (values as the file stores them) into `out`, one value per element.
    pub fn convert(&self, bytes: &[u8], out: ArrayViewMut1<f32>) {
        convert_into(bytes, out, self.kind, self.size, self.big_endian);
    }
}

/// An open `.npy` file of shape `n × d` (trailing singleton axes allowed), positioned after
/// the rows already read.
pub struct NpyRows {
    file: File,
    path: PathBuf,
    layout: NpyLayout,
    /// Rows handed out so far.
    next_row: usize,
    /// Raw bytes of one block (reused).
    buf: Vec<u8>,
}

/// Opens `path` and checks its header and length. Errors (each naming the file): not a
/// `.npy` file, a header that is not a flat dict, a shape other than `n × d` (× 1 …), a
/// dtype other than float32/64 or an integer, a file shorter or longer than the shape says.
pub(super) fn open_npy(path: &Path) -> Result<(File, NpyLayout)> {
    let io = |source| Error::Io { path: path.to_path_buf(), source };
    let mut file = File::open(path).map_err(io)?;
    let len = file.metadata().map_err(io)?.len();
    if len == 0 {
        return Err(Error::bad_file(path, "empty file (0 bytes): re-export it with numpy.save"));
    }
    let corrupt = |e: &dyn std::fmt::Display| {
        Error::bad_file(path, format!("not a valid .npy file (corrupt or truncated): {e}"))
    };
    let mut head = vec![0u8; len.min(12) as usize];
    file.read_exact(&mut head).map_err(io)?;
    let Some((preamble, header_len)) = declared_header_len(&head) else {
        // Bad magic or version: the header parser says which.
        return Err(match Header::from_reader(&mut &head[..]) {
            Err(e) => corrupt(&e),
            Ok(_) => corrupt(&"unreadable preamble"),
        });
    };
    let data_start = (preamble + header_len) as u64;
    if data_start > len {
        return Err(Error::bad_file(
            path,
            format!("truncated .npy file: the header claims {header_len} bytes but the file has {len} bytes"),
        ));
    }
    head.resize(preamble + header_len, 0);
    file.seek(SeekFrom::Start(0)).map_err(io)?;
    file.read_exact(&mut head).map_err(io)?;
    check_header_depth(&head[preamble..], path)?;
    let header = Header::from_reader(&mut &head[..]).map_err(|e| corrupt(&e))?;
    let shape = &header.shape;
    if shape.len() < 2 || shape[2..].iter().any(|&s| s != 1) {
        return Err(Error::bad_file(
            path,
            format!("features must be a 2-D array n×d (trailing singleton axes allowed), found shape {shape:?}"),
        ));
    }
    let descr = header.type_descriptor.to_string();
    let (kind, size, big_endian) = parse_descr(descr.trim_matches('\'')).ok_or_else(|| {
        Error::bad_file(
            path,
            format!("unsupported dtype {descr}: expected a float (f4, f8) or integer array"),
        )
    })?;
    let (n, d) = (shape[0], shape[1]);
    let need = n.checked_mul(d).and_then(|v| v.checked_mul(size)).map(|b| b as u64);
    let have = len - data_start;
    if need.is_none_or(|b| b > have) {
        return Err(Error::bad_file(
            path,
            format!(
                "truncated .npy file: header says shape {shape:?} of {descr} ({} bytes of data) \
                 but the file has {have} bytes after the header",
                need.map_or_else(|| "more than 2^64".to_string(), |b| b.to_string())
            ),
        ));
    }
    if let Some(extra) = need.map(|b| have - b).filter(|&e| e > 0) {
        return Err(corrupt(&format!("file had {extra} extra bytes before EOF")));
    }
    let fortran = header.layout.is_fortran();
    Ok((file, NpyLayout { n, d, kind, size, big_endian, fortran, data_start }))
}

impl NpyRows {
    /// Opens `path` and checks its header and length ([`open_npy`]'s errors, each naming the file).
    pub fn open(path: &Path) -> Result<Self> {
        let (file, layout) = open_npy(path)?;
        Ok(NpyRows { file, path: path.to_path_buf(), layout, next_row: 0, buf: Vec::new() })
    }

    /// Rows n of the whole file.
    pub fn nrows(&self) -> usize {
        self.layout.n
    }

    /// Columns d.
    pub fn ncols(&self) -> usize {
        self.layout.d
    }

    /// The next at most `max_rows` rows (`rows × d`, standard layout), `None` after the last.
    pub fn next_chunk(&mut self, max_rows: usize) -> Result<Option<Array2<f32>>> {
        let rows = max_rows.max(1).min(self.layout.n - self.next_row);
        if rows == 0 {
            return Ok(None);
        }
        let mut out = Array2::zeros((rows, self.layout.d));
        self.read_into(out.view_mut())?;
        Ok(Some(out))
    }

    /// The whole matrix (`n × d`), read [`CHUNK_ROWS`] rows at a time into one allocation.
    pub fn read_all(mut self) -> Result<Array2<f32>> {
        let mut out = Array2::zeros((self.layout.n - self.next_row, self.layout.d));
        for block in out.axis_chunks_iter_mut(Axis(0), CHUNK_ROWS) {
            self.read_into(block)?;
        }
        Ok(out)
    }

    /// Fills `out` (`rows × d`) with the next `rows` rows.
    fn read_into(&mut self, mut out: ArrayViewMut2<f32>) -> Result<()> {
        let (r0, rows, l) = (self.next_row, out.nrows(), self.layout);
        assert!(
            r0 + rows <= l.n && out.ncols() == l.d,
            "NpyRows::read_into: block outside the file"
        );
        if l.fortran {
            // Column j of the block is one run of `rows` values at (j·n + r0).
            for (j, col) in out.axis_iter_mut(Axis(1)).enumerate() {
                self.read_run((j * l.n + r0) as u64, rows)?;
                l.convert(&self.buf, col);
            }
        } else {
            self.read_run((r0 * l.d) as u64, rows * l.d)?;
            let flat = out.as_slice_mut().expect("blocks are standard layout");
            l.convert(&self.buf, ArrayViewMut1::from(flat));
        }
        self.next_row += rows;
        Ok(())
    }

    /// Reads `count` values starting at value index `first` into `buf`. The length was checked
    /// on opening, so a short read means the file changed since: reported as truncated.
    fn read_run(&mut self, first: u64, count: usize) -> Result<()> {
        let path = &self.path;
        self.buf.resize(count * self.layout.size, 0);
        let at = self.layout.data_start + first * self.layout.size as u64;
        self.file
            .seek(SeekFrom::Start(at))
            .map_err(|source| Error::Io { path: path.clone(), source })?;
        self.file.read_exact(&mut self.buf).map_err(|e| match e.kind() {
            std::io::ErrorKind::UnexpectedEof => Error::bad_file(
                path,
                "truncated .npy file: it became shorter while it was read (was it rewritten?)",
            ),
            _ => Error::Io { path: path.clone(), source: e },
        })
    }
}

/// `(kind, bytes per value, big-endian)` of a numpy type string, for the dtypes the whole-file
/// reader accepts (ndarray-npy's spellings: one-byte ints also as `i1`, `b`, `u1`, `B`).
fn parse_descr(s: &str) -> Option<(Kind, usize, bool)> {
    match s {
        "|i1" | "i1" | "b" => return Some((Kind::Signed, 1, false)),
        "|u1" | "u1" | "B" => return Some((Kind::Unsigned, 1, false)),
        _ => {}
    }
    let big = match s.as_bytes().first()? {
        b'<' => false,
        b'>' => true,
        _ => return None,
    };
    let kind_size = match &s[1..] {
        "f4" => (Kind::Float, 4),
        "f8" => (Kind::Float, 8),
        "i2" => (Kind::Signed, 2),
        "i4" => (Kind::Signed, 4),
        "i8" => (Kind::Signed, 8),
        "u2" => (Kind::Unsigned, 2),
        "u4" => (Kind::Unsigned, 4),
        "u8" => (Kind::Unsigned, 8),
        _ => return None,
    };
    Some((kind_size.0, kind_size.1, big))
}

/// Converts `bytes` (one value per `size` bytes) into `out`, element by element, with the
/// whole-file reader's casts.
fn convert_into(bytes: &[u8], mut out: ArrayViewMut1<f32>, kind: Kind, size: usize, big: bool) {
    macro_rules! conv {
        ($t:ty, $n:expr, $f:expr) => {
            for (o, b) in out.iter_mut().zip(bytes.chunks_exact($n)) {
                let raw: [u8; $n] = b.try_into().expect("chunks_exact");
                let v = if big { <$t>::from_be_bytes(raw) } else { <$t>::from_le_bytes(raw) };
                *o = $f(v);
            }
        };
    }
    match (kind, size) {
        (Kind::Float, 4) => conv!(f32, 4, |v: f32| v),
        (Kind::Float, 8) => conv!(f64, 8, |v: f64| v as f32),
        (Kind::Signed, 1) => conv!(i8, 1, |v: i8| i64::from(v) as f32),
        (Kind::Signed, 2) => conv!(i16, 2, |v: i16| i64::from(v) as f32),
        (Kind::Signed, 4) => conv!(i32, 4, |v: i32| i64::from(v) as f32),
        (Kind::Signed, 8) => conv!(i64, 8, |v: i64| v as f32),
        (Kind::Unsigned, 1) => conv!(u8, 1, |v: u8| i64::from(v) as f32),
        (Kind::Unsigned, 2) => conv!(u16, 2, |v: u16| i64::from(v) as f32),
        (Kind::Unsigned, 4) => conv!(u32, 4, |v: u32| i64::from(v) as f32),
        (Kind::Unsigned, 8) => conv!(u64, 8, |v: u64| v as f32),
        _ => unreachable!("parse_descr gives only these sizes"),
    }
}
