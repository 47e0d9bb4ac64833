//! The checks made on a `.mat` file before matfile parses it (`data/mat_check.rs`): sizes
//! and dimensions that would make matfile panic, and bounded inflation of compressed
//! variables. Each is an error naming the file and the problem, never a panic.

use std::io::Write;
use std::path::Path;

use tempfile::tempdir;

use super::{err, write_mat, MatData};
use crate::data::parse_mat;

/// A written v5 file as bytes.
fn mat_bytes(vars: &[(&str, &[usize], MatData)]) -> Vec<u8> {
    let dir = tempdir().unwrap();
    let p = dir.path().join("m.mat");
    write_mat(&p, vars);
    std::fs::read(p).unwrap()
}

/// `bytes[128..]` (the variables of a little-endian file) as one compressed element whose
/// zlib stream holds `payload`.
fn compressed(header_of: &[u8], payload: &[u8]) -> Vec<u8> {
    let mut z = libflate::zlib::Encoder::new(Vec::new()).unwrap();
    z.write_all(payload).unwrap();
    let stream = z.finish().into_result().unwrap();
    let mut out = header_of[..128].to_vec();
    out.extend(15u32.to_le_bytes());
    out.extend((stream.len() as u32).to_le_bytes());
    out.extend(stream);
    out
}

#[test]
fn mat_dimensions_overflowing_i32_are_refused_with_the_dimensions() {
    let bytes = mat_bytes(&[("fts", &[65536, 65536], MatData::Double(vec![1.0; 6]))]);
    let e = err(parse_mat(&bytes, Path::new("o.mat")));
    assert!(e.starts_with("o.mat: ") && e.contains("dimensions [65536, 65536]"), "{e}");
}

#[test]
fn mat_element_size_near_u32_max_is_refused() {
    // Found by fuzzing: matfile rounds the size up to 8 bytes in u32 and panics.
    let mut bytes = mat_bytes(&[])[..128].to_vec();
    bytes.extend(14u32.to_le_bytes());
    bytes.extend(u32::MAX.to_le_bytes());
    let e = err(parse_mat(&bytes, Path::new("s.mat")));
    assert!(e.contains("element size 4294967295 is too large") && e.contains("byte 128"), "{e}");
}

#[test]
fn truncated_mat_says_how_many_bytes_are_missing() {
    let bytes = mat_bytes(&[("fts", &[3, 2], MatData::Double(vec![1.0; 6]))]);
    let cut = &bytes[..bytes.len() - 20];
    let e = err(parse_mat(cut, Path::new("t.mat")));
    let declared = bytes.len() - 128 - 8;
    assert!(
        e.contains(&format!(
            "element of {declared} bytes, but only {} bytes are left",
            declared - 20
        )),
        "{e}"
    );
}

#[test]
fn compressed_mat_variable_is_inflated_and_read() {
    let plain = mat_bytes(&[
        ("X", &[2, 1], MatData::Double(vec![1.5, 2.5])),
        ("y", &[2, 1], MatData::UInt8(vec![0, 1])),
    ]);
    // Compress the first variable only; the second stays plain after it.
    let x_len = 8 + u32::from_le_bytes(plain[132..136].try_into().unwrap()) as usize;
    let mut bytes = compressed(&plain, &plain[128..128 + x_len]);
    bytes.extend(&plain[128 + x_len..]);
    let parsed = parse_mat(&bytes, Path::new("c.mat")).unwrap();
    assert_eq!(parsed.features.as_slice().unwrap(), &[1.5f32, 2.5]);
    assert_eq!(parsed.labels, Some(vec![0, 1]));
}

#[test]
fn compressed_mat_variable_inflating_beyond_its_tag_is_refused() {
    let plain = mat_bytes(&[("X", &[2, 1], MatData::Double(vec![1.5, 2.5]))]);
    let mut payload = plain[128..].to_vec();
    payload.extend([0u8; 4096]);
    let e = err(parse_mat(&compressed(&plain, &payload), Path::new("z.mat")));
    assert!(e.contains("z.mat") && e.contains("inflates to more than the"), "{e}");
    // And one that stops short of what its tag declares.
    let short = &plain[128..plain.len() - 8];
    let e = err(parse_mat(&compressed(&plain, short), Path::new("z.mat")));
    assert!(e.contains("but its tag declares"), "{e}");
}

#[test]
fn mat_trailing_zero_bytes_are_ignored_but_a_cut_tag_is_not() {
    let mut bytes = mat_bytes(&[("X", &[1, 1], MatData::Double(vec![2.0]))]);
    bytes.extend([0u8; 4]);
    let parsed = parse_mat(&bytes, Path::new("p.mat")).unwrap();
    assert_eq!(parsed.features.as_slice().unwrap(), &[2.0f32]);
    let n = bytes.len();
    bytes[n - 4] = 14;
    let e = err(parse_mat(&bytes, Path::new("p.mat")));
    assert!(e.contains("ends inside an element tag (4 bytes left)"), "{e}");
}
