//! A checking pass over a MATLAB v5 file before the matfile crate parses it.
//!
//! matfile trusts the sizes stored in the file. Found by fuzzing: a tag size near 2³² or
//! dimensions whose product overflows `i32` make it panic (integer overflow), and it inflates
//! compressed variables without bound. This pass walks the top-level elements and returns a
//! v5 file that matfile can parse without those risks:
//! - every tag matfile will read (element, dimensions, name, real and imaginary parts) fits
//!   in its enclosing element;
//! - dimensions are non-negative and their product fits in `i32`;
//! - compressed variables are inflated here, to no more than the size their own tag declares;
//! - only numeric arrays are kept: cell, struct, object, char and sparse arrays and
//!   non-array elements are dropped (matfile ignores them too, but prints a line to stdout
//!   for some of them).
//!
//! Errors are [`Error::BadFile`] naming the file and the byte offset of the bad element.

use std::io::Read;
use std::path::Path;

use crate::{Error, Result};

/// Bytes of the text, subsystem offset, version and endianness fields.
const HEADER_LEN: usize = 128;
/// Data types (MATLAB's `mi*` codes) and array classes (`mx*`) this pass cares about.
const MI_INT32: u32 = 5;
const MI_UINT32: u32 = 6;
const MI_MATRIX: u32 = 14;
const MI_COMPRESSED: u32 = 15;
/// Classes 1..=5: cell, struct, object, char, sparse. 6..=15 are numeric.
const LAST_NON_NUMERIC_CLASS: u32 = 5;
const LAST_NUMERIC_CLASS: u32 = 15;

#[derive(Clone, Copy)]
enum Endian {
    Little,
    Big,
}

impl Endian {
    fn u32(self, b: [u8; 4]) -> u32 {
        match self {
            Endian::Little => u32::from_le_bytes(b),
            Endian::Big => u32::from_be_bytes(b),
        }
    }
}

/// One data-element tag, as matfile reads it.
struct Tag {
    data_type: u32,
    /// Bytes of data that follow the tag.
    size: usize,
    /// Bytes of the tag itself: 8 (long format) or 4 (small format, data packed inside).
    tag_len: usize,
    /// Padding after the data up to the next 8-byte boundary.
    padding: usize,
}

impl Tag {
    /// Bytes from the start of the tag to the end of its padding.
    fn total(&self) -> usize {
        self.tag_len + self.size + self.padding
    }
}

/// Reads the tag at the start of `b`; `None` when fewer than 4 or 8 bytes are left.
/// Refuses sizes whose rounding up to 8 bytes overflows `u32` (matfile panics on them).
fn read_tag(b: &[u8], e: Endian, path: &Path, at: usize) -> Result<Option<Tag>> {
    let word = |i: usize| b.get(i..i + 4).map(|w| e.u32([w[0], w[1], w[2], w[3]]));
    let Some(first) = word(0) else {
        return Ok(None);
    };
    if first & 0xFFFF_0000 != 0 {
        // Small format: type and size (at most 4) in one word, data in the next 4 bytes.
        let size = (first >> 16) as usize;
        if size > 4 {
            return Err(corrupt(
                path,
                at,
                format!("small data element of {size} bytes (at most 4)"),
            ));
        }
        return Ok(Some(Tag { data_type: first & 0xFFFF, size, tag_len: 4, padding: 4 - size }));
    }
    let Some(size) = word(4) else {
        return Ok(None);
    };
    if size > u32::MAX - 7 {
        return Err(corrupt(path, at, format!("element size {size} is too large")));
    }
    let size = size as usize;
    Ok(Some(Tag { data_type: first, size, tag_len: 8, padding: size.next_multiple_of(8) - size }))
}

fn corrupt(path: &Path, at: usize, what: impl std::fmt::Display) -> Error {
    Error::bad_file(
        path,
        format!("corrupt or truncated MATLAB v5 file: {what} (element at byte {at})"),
    )
}

/// Returns `bytes` (a v5 file whose 128-byte header was checked by the caller) rewritten as
/// an uncompressed v5 file holding only its numeric arrays, each checked as described in
/// the module documentation.
pub(super) fn numeric_arrays(bytes: &[u8], path: &Path) -> Result<Vec<u8>> {
    let e = match bytes.get(126..HEADER_LEN) {
        Some(b"IM") => Endian::Little,
        Some(b"MI") => Endian::Big,
        _ => {
            return Err(Error::bad_file(
                path,
                "not a MATLAB v5 .mat file: no endianness indicator (IM or MI) at byte 126",
            ))
        }
    };
    let mut out = bytes[..HEADER_LEN].to_vec();
    let mut at = HEADER_LEN;
    while at < bytes.len() {
        let rest = &bytes[at..];
        let Some(tag) = read_tag(rest, e, path, at)? else {
            // Too short for a tag: zero padding is tolerated, anything else is a cut tag.
            if rest.iter().all(|&b| b == 0) {
                break;
            }
            return Err(corrupt(
                path,
                at,
                format!("the file ends inside an element tag ({} bytes left)", rest.len()),
            ));
        };
        let Some(data) = rest.get(tag.tag_len..tag.tag_len + tag.size) else {
            return Err(corrupt(
                path,
                at,
                format!(
                    "element of {} bytes, but only {} bytes are left",
                    tag.size,
                    rest.len() - tag.tag_len.min(rest.len())
                ),
            ));
        };
        match tag.data_type {
            MI_MATRIX if is_numeric_array(data, e, path, at)? => {
                push_element(&mut out, &rest[..tag.tag_len], data)
            }
            MI_COMPRESSED => {
                let (inner, element) = inflate(data, e, path, at)?;
                let end = (inner.tag_len + inner.size).min(element.len());
                let inner_data = &element[inner.tag_len..end];
                // MATLAB compresses whole variables; anything else inside is skipped.
                if inner.data_type == MI_MATRIX && is_numeric_array(inner_data, e, path, at)? {
                    push_element(&mut out, &element[..inner.tag_len], inner_data);
                }
            }
            // Anything else at the top level is not a variable.
            _ => {}
        }
        // Compressed elements are not padded (matfile's rule); others are, to 8 bytes. A
        // missing final padding is tolerated, as matfile does.
        let skip =
            if tag.data_type == MI_COMPRESSED { tag.tag_len + tag.size } else { tag.total() };
        at = at.saturating_add(skip).min(bytes.len());
    }
    Ok(out)
}

/// Appends one element (its tag bytes, its data, zero padding to 8 bytes) to `out`.
fn push_element(out: &mut Vec<u8>, tag: &[u8], data: &[u8]) {
    out.extend_from_slice(tag);
    out.extend_from_slice(data);
    out.resize(out.len().next_multiple_of(8), 0);
}

/// Inflates the zlib stream of a compressed element: one element (its tag and the element
/// bytes), read no further than the size its tag declares, so memory grows with the bytes
/// actually inflated and never beyond that size. The stream must end there (which also
/// checks its checksum).
fn inflate(data: &[u8], e: Endian, path: &Path, at: usize) -> Result<(Tag, Vec<u8>)> {
    let bad = |what: String| corrupt(path, at, format!("compressed variable: {what}"));
    let mut z = libflate::zlib::Decoder::new(data).map_err(|err| bad(err.to_string()))?;
    let mut element = vec![0u8; 8];
    z.read_exact(&mut element).map_err(|err| bad(format!("cannot inflate its tag: {err}")))?;
    let inner = read_tag(&element, e, path, at)?.ok_or_else(|| bad("no tag".to_string()))?;
    // Bytes after the first 8 up to the end of the padding; the data must all be there.
    let declared = inner.total() - 8;
    let needed = (inner.tag_len + inner.size).saturating_sub(8);
    (&mut z)
        .take(declared as u64)
        .read_to_end(&mut element)
        .map_err(|err| bad(format!("cannot inflate: {err}")))?;
    let inflated = element.len() - 8;
    if inflated < needed {
        return Err(bad(format!(
            "inflates to {} bytes, but its tag declares {}",
            inflated + 8 - inner.tag_len,
            inner.size
        )));
    }
    let more = z.read(&mut [0u8; 1]).map_err(|err| bad(format!("cannot inflate: {err}")))?;
    if more != 0 {
        return Err(bad(format!(
            "inflates to more than the {} bytes its tag declares",
            inner.size
        )));
    }
    Ok((inner, element))
}

/// Checks the body of an `miMATRIX` element the way matfile will read it. `Ok(false)` for
/// arrays matfile skips (cell, struct, object, char, sparse); errors for what would make it
/// misbehave (sub-elements that overflow the body, negative or overflowing dimensions).
fn is_numeric_array(body: &[u8], e: Endian, path: &Path, at: usize) -> Result<bool> {
    // Array flags: a fixed 16-byte sub-element (miUINT32, 8 bytes: flags|class, nzmax).
    let word = |i: usize| body.get(i..i + 4).map(|w| e.u32([w[0], w[1], w[2], w[3]]));
    let (Some(MI_UINT32), Some(8), Some(flags), Some(_nzmax)) =
        (word(0), word(4), word(8), word(12))
    else {
        return Err(corrupt(path, at, "array without its flags sub-element"));
    };
    let class = flags & 0xFF;
    let complex = flags & 0x0800 != 0;
    if (1..=LAST_NON_NUMERIC_CLASS).contains(&class) {
        return Ok(false);
    }
    if !(LAST_NON_NUMERIC_CLASS + 1..=LAST_NUMERIC_CLASS).contains(&class) {
        return Err(corrupt(path, at, format!("unknown array class {class}")));
    }
    // Dimensions, name, real part, and the imaginary part of a complex array.
    let mut sub_at = 16;
    let parts = if complex { 4 } else { 3 };
    for part in 0..parts {
        let rest = body.get(sub_at..).unwrap_or_default();
        let Some(tag) = read_tag(rest, e, path, at)? else {
            return Err(corrupt(path, at, "array ends before its data"));
        };
        let Some(data) = rest.get(tag.tag_len..tag.tag_len + tag.size) else {
            return Err(corrupt(
                path,
                at,
                format!("array sub-element of {} bytes overflows the array", tag.size),
            ));
        };
        if part == 0 {
            check_dims(data, &tag, e, path, at)?;
        }
        sub_at += tag.total();
    }
    Ok(true)
}

/// Dimensions: miINT32, at least 2 of them, none negative, product (left to right, as
/// matfile computes it) within `i32`.
fn check_dims(data: &[u8], tag: &Tag, e: Endian, path: &Path, at: usize) -> Result<()> {
    if tag.data_type != MI_INT32 || tag.size < 8 || tag.size % 4 != 0 {
        return Err(corrupt(path, at, "array without a valid dimensions sub-element"));
    }
    let dims: Vec<i32> =
        data.chunks_exact(4).map(|w| e.u32([w[0], w[1], w[2], w[3]]) as i32).collect();
    let fits = dims.iter().try_fold(1i32, |acc, &d| if d < 0 { None } else { acc.checked_mul(d) });
    if fits.is_none() {
        return Err(corrupt(
            path,
            at,
            format!("array dimensions {dims:?} are negative or their product exceeds {}", i32::MAX),
        ));
    }
    Ok(())
}
