//! The `.npy` preamble and header checks shared by the whole-file reader ([`super::npy`]) and
//! the row reader ([`super::npy_rows`]): both run them before handing a header to a parser that
//! would allocate or backtrack on what a crafted file declares.

use std::path::Path;

use crate::{Error, Result};

/// Deepest bracket nesting accepted in a header. A numeric array needs 2 (the dict and the
/// shape tuple); a structured dtype's list of field tuples a few more (and is refused later).
pub(super) const MAX_HEADER_DEPTH: usize = 4;

/// Deepest nesting of `{`, `[` and `(` in `header` (quotes are not considered: real headers
/// have no brackets inside strings).
pub(super) fn bracket_depth(header: &[u8]) -> usize {
    let (mut depth, mut max) = (0usize, 0usize);
    for &b in header {
        match b {
            b'{' | b'[' | b'(' => {
                depth += 1;
                max = max.max(depth);
            }
            b'}' | b']' | b')' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    max
}

/// Length of the preamble (magic, version, length field) and the header length it declares;
/// `None` when the magic string, the version or the length field is missing (the header
/// parser then reports that).
pub(super) fn declared_header_len(bytes: &[u8]) -> Option<(usize, usize)> {
    if !bytes.starts_with(b"\x93NUMPY") {
        return None;
    }
    match *bytes.get(6..8)? {
        // Version 1.0: little-endian u16.
        [1, 0] => match *bytes.get(8..10)? {
            [a, b] => Some((10, usize::from(u16::from_le_bytes([a, b])))),
            _ => None,
        },
        // Versions 2.0 and 3.0: little-endian u32.
        [2 | 3, 0] => match *bytes.get(8..12)? {
            [a, b, c, d] => usize::try_from(u32::from_le_bytes([a, b, c, d])).ok().map(|n| (12, n)),
            _ => None,
        },
        _ => None,
    }
}

/// Refuses a header nested deeper than [`MAX_HEADER_DEPTH`] brackets (see [`bracket_depth`]).
pub(super) fn check_header_depth(header: &[u8], path: &Path) -> Result<()> {
    let depth = bracket_depth(header);
    if depth > MAX_HEADER_DEPTH {
        return Err(Error::bad_file(
            path,
            format!(
                "not a valid .npy file: the header nests brackets {depth} deep (a numeric \
                 array's header is a flat dict; at most {MAX_HEADER_DEPTH} levels are accepted)"
            ),
        ));
    }
    Ok(())
}
