//! Checks shared by the figure tests: a written figure file exists, decodes, has the expected
//! size and is not blank.

#![allow(dead_code)]

use std::path::Path;

/// Minimum variance of the pixel luminance (0–255 scale) of a figure that shows something; a
/// blank white image has 0, the sparsest real figure here is well above 100.
pub const VARIANCE_FLOOR: f64 = 50.0;

/// Decodes `path` as an 8-bit RGB PNG of `w × h` and returns the luminance variance, after
/// asserting it is above [`VARIANCE_FLOOR`] and that at least 1% of the pixels are not white.
pub fn assert_png(path: &Path, w: u32, h: u32) -> f64 {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut dec = png::Decoder::new(std::io::Cursor::new(bytes))
        .read_info()
        .unwrap_or_else(|e| panic!("{}: not a PNG: {e}", path.display()));
    let info = dec.info();
    assert_eq!((info.width, info.height), (w, h), "{}: size", path.display());
    assert_eq!(info.color_type, png::ColorType::Rgb, "{}", path.display());
    let mut buf = vec![0u8; dec.output_buffer_size()];
    dec.next_frame(&mut buf).unwrap();
    let lum: Vec<f64> = buf
        .chunks(3)
        .map(|p| 0.299 * f64::from(p[0]) + 0.587 * f64::from(p[1]) + 0.114 * f64::from(p[2]))
        .collect();
    let mean = lum.iter().sum::<f64>() / lum.len() as f64;
    let var = lum.iter().map(|l| (l - mean).powi(2)).sum::<f64>() / lum.len() as f64;
    let inked =
        buf.chunks(3).filter(|p| p.iter().any(|&v| v < 250)).count() as f64 / lum.len() as f64;
    assert!(var > VARIANCE_FLOOR, "{}: looks blank (pixel variance {var:.1})", path.display());
    assert!(
        inked > 0.01,
        "{}: looks blank ({:.2}% non-white pixels)",
        path.display(),
        100.0 * inked
    );
    var
}

/// Checks that `path` is an SVG document of `w × h` with at least `min_elements` drawing
/// elements (the SVG counterpart of "not blank").
pub fn assert_svg(path: &Path, w: u32, h: u32, min_elements: usize) {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let start = text.find("<svg").unwrap_or_else(|| panic!("{}: no <svg> element", path.display()));
    let head = &text[start..start + text[start..].find('>').unwrap()];
    assert!(
        head.contains(&format!("width=\"{w}\"")) && head.contains(&format!("height=\"{h}\"")),
        "{}: header {head}",
        path.display()
    );
    assert!(text.trim_end().ends_with("</svg>"), "{}: truncated", path.display());
    let n = ["<rect", "<circle", "<polyline", "<line", "<text", "<path", "<polygon"]
        .iter()
        .map(|t| text.matches(t).count())
        .sum::<usize>();
    assert!(n >= min_elements, "{}: only {n} drawing elements", path.display());
}

/// Both files of figure `name` under `dir/figures`.
pub fn assert_figure(dir: &Path, name: &str, w: u32, h: u32, min_elements: usize) {
    let fig = dir.join("figures");
    assert_png(&fig.join(format!("{name}.png")), w, h);
    assert_svg(&fig.join(format!("{name}.svg")), w, h, min_elements);
}
