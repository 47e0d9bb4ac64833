//! Image → network input, as the reference extraction did it with PIL and torchvision:
//! decode to 8-bit RGB, resize the shorter side to 297 with PIL's bicubic filter (antialiased,
//! a = −0.5, 8-bit fixed-point, horizontal pass then vertical), centre-crop 260×260 (offset
//! rounded half-to-even, as Python's `round`), scale to [0, 1] and normalise each channel with
//! mean 127/255 and std 128/255, i.e. `(x − 127) / 128`. Output: `(3, 260, 260)` f32, C order.
//!
//! **Bounds.** An image file's header states its size, and a few hundred bytes of PNG can claim
//! gigapixels. Before decoding, the header's dimensions must satisfy: each side ≤ [`MAX_SIDE`],
//! width × height ≤ [`MAX_PIXELS`], longer / shorter side ≤ [`MAX_ASPECT`]; the decoder itself
//! runs under `image`'s allocation limit [`MAX_DECODE_BYTES`]. A file outside the bounds is an
//! [`Error::Image`] naming it and the bound (so is a file over [`MAX_FILE_BYTES`]) (extraction skips it and lists it in `extract.json`).
//! The resize computes only the 260×260 window the centre crop keeps (each output pixel is the
//! same as in the full resize: its weights depend on its own index only), so its memory is
//! 260 × the image's height bytes × 3 at most, whatever the aspect ratio.

use std::path::Path;

use image::RgbImage;

use crate::arch::IMAGE_SIZE;
use crate::{Error, Result};

/// Shorter side after resizing (torchvision `Resize(297)`).
pub const RESIZE_SHORT: usize = 297;
/// Per-channel mean subtracted after scaling to [0, 1] (127/255).
pub const MEAN: f32 = 127.0 / 255.0;
/// Per-channel std divided by after subtracting the mean (128/255).
pub const STD: f32 = 128.0 / 255.0;
/// Bits of the fixed-point resampling coefficients (PIL's `PRECISION_BITS`).
const PRECISION_BITS: u32 = 22;

/// Longest image side accepted, in pixels.
pub const MAX_SIDE: u32 = 16_384;
/// Most pixels accepted (width × height): 40 megapixels, 120 MB as 8-bit RGB.
pub const MAX_PIXELS: u64 = 40_000_000;
/// Largest ratio of the longer to the shorter side (the crop would see a sliver beyond it).
pub const MAX_ASPECT: u32 = 20;
/// The decoder's allocation limit (`image::Limits::max_alloc`).
pub const MAX_DECODE_BYTES: u64 = 512 << 20;

/// Why an image of `w` × `h` pixels is refused before decoding, if it is.
pub fn size_refusal(w: u32, h: u32) -> Option<String> {
    let (long, short) = (w.max(h), w.min(h));
    if short == 0 {
        return Some(format!("image of {w}x{h} pixels has no pixels"));
    }
    if long > MAX_SIDE {
        return Some(format!("image of {w}x{h} pixels: a side exceeds {MAX_SIDE}"));
    }
    if w as u64 * h as u64 > MAX_PIXELS {
        return Some(format!("image of {w}x{h} pixels exceeds {MAX_PIXELS} pixels"));
    }
    if long as u64 > short as u64 * MAX_ASPECT as u64 {
        return Some(format!("image of {w}x{h} pixels: aspect ratio over {MAX_ASPECT}:1"));
    }
    None
}

/// Largest image file read, in bytes (checked before reading it).
pub const MAX_FILE_BYTES: u64 = 256 << 20;

fn limits() -> image::Limits {
    let mut l = image::Limits::default();
    l.max_image_width = Some(MAX_SIDE);
    l.max_image_height = Some(MAX_SIDE);
    l.max_alloc = Some(MAX_DECODE_BYTES);
    l
}

/// Decodes `path` (JPEG or PNG, by content) into 8-bit RGB: [`decode_bytes`] on the file's
/// contents, after checking its size against [`MAX_FILE_BYTES`].
pub fn decode(path: &Path) -> Result<RgbImage> {
    let err = |reason: String| Error::Image { path: path.to_path_buf(), reason };
    let len = std::fs::metadata(path).map_err(|e| err(e.to_string()))?.len();
    if len > MAX_FILE_BYTES {
        return Err(err(format!("file of {len} bytes exceeds {MAX_FILE_BYTES}")));
    }
    let bytes = std::fs::read(path).map_err(|e| err(e.to_string()))?;
    decode_bytes(&bytes).map_err(err)
}

/// Decodes an image file's bytes (JPEG or PNG, by content) into 8-bit RGB; grey and alpha
/// images are converted as PIL's `convert("RGB")` does (grey replicated, alpha dropped). The
/// header's size is checked against the bounds of the module docs before anything is decoded.
pub fn decode_bytes(bytes: &[u8]) -> std::result::Result<RgbImage, String> {
    let open = || -> std::result::Result<image::ImageReader<std::io::Cursor<&[u8]>>, String> {
        let reader = image::ImageReader::new(std::io::Cursor::new(bytes));
        let mut reader = reader.with_guessed_format().map_err(|e| e.to_string())?;
        reader.limits(limits());
        Ok(reader)
    };
    let (w, h) = open()?.into_dimensions().map_err(|e| e.to_string())?;
    if let Some(reason) = size_refusal(w, h) {
        return Err(reason);
    }
    let img = open()?.decode().map_err(|e| e.to_string())?;
    if (img.width(), img.height()) != (w, h) {
        return Err(format!(
            "decoded {}x{} pixels, header said {w}x{h}",
            img.width(),
            img.height()
        ));
    }
    Ok(img.to_rgb8())
}

/// Reads and preprocesses one image file into the `(3, 260, 260)` network input.
pub fn load_input(path: &Path) -> Result<Vec<f32>> {
    let img = decode(path)?;
    to_input(&img).map_err(|reason| Error::Image { path: path.to_path_buf(), reason })
}

/// Resize + centre crop + normalise an RGB image into the `(3, 260, 260)` network input; an
/// error for an image outside the size bounds of the module docs.
pub fn to_input(img: &RgbImage) -> std::result::Result<Vec<f32>, String> {
    if let Some(reason) = size_refusal(img.width(), img.height()) {
        return Err(reason);
    }
    let (w, h) = (img.width() as usize, img.height() as usize);
    let (nw, nh) = resized_size(w, h);
    let window = Window {
        left: crop_offset(nw),
        top: crop_offset(nh),
        width: IMAGE_SIZE,
        height: IMAGE_SIZE,
    };
    let crop = resize_bicubic_window(img.as_raw(), w, h, nw, nh, window);
    let n = IMAGE_SIZE * IMAGE_SIZE;
    let mut out = vec![0f32; 3 * n];
    for (p, px) in crop.chunks_exact(3).enumerate() {
        for c in 0..3 {
            out[c * n + p] = (px[c] as f32 / 255.0 - MEAN) / STD;
        }
    }
    Ok(out)
}

/// torchvision's output size for `Resize(297)`: shorter side 297, longer side truncated.
pub fn resized_size(w: usize, h: usize) -> (usize, usize) {
    let s = RESIZE_SHORT;
    if w <= h {
        (s, (s as f64 * h as f64 / w as f64) as usize)
    } else {
        ((s as f64 * w as f64 / h as f64) as usize, s)
    }
}

/// torchvision's centre-crop offset `int(round((size − 260) / 2))` with half-to-even rounding.
pub fn crop_offset(size: usize) -> usize {
    let d = size - IMAGE_SIZE;
    let half = d / 2;
    if d % 2 == 1 && half % 2 == 1 {
        half + 1
    } else {
        half
    }
}

/// PIL's bicubic kernel (a = −0.5).
fn bicubic(x: f64) -> f64 {
    let a = -0.5;
    let x = x.abs();
    if x < 1.0 {
        ((a + 2.0) * x - (a + 3.0)) * x * x + 1.0
    } else if x < 2.0 {
        (((x - 5.0) * x + 8.0) * x - 4.0) * a
    } else {
        0.0
    }
}

/// Fixed-point resampling weights for one axis, for the output indices `outputs` of a resize
/// from `in_size` to `out_size`: per output index, the first input index and the integer
/// weights (PIL's `precompute_coeffs` + `normalize_coeffs_8bpc`).
fn coefficients(
    in_size: usize,
    out_size: usize,
    outputs: std::ops::Range<usize>,
) -> Vec<(usize, Vec<i32>)> {
    let scale = in_size as f64 / out_size as f64;
    let filterscale = scale.max(1.0);
    let support = 2.0 * filterscale;
    outputs
        .map(|xx| {
            let center = (xx as f64 + 0.5) * scale;
            let xmin = ((center - support + 0.5) as i64).max(0) as usize;
            let xmax = ((center + support + 0.5) as i64).min(in_size as i64) as usize;
            let w: Vec<f64> =
                (xmin..xmax).map(|x| bicubic((x as f64 - center + 0.5) / filterscale)).collect();
            let total: f64 = w.iter().sum();
            let fixed = w
                .iter()
                .map(|&k| {
                    let k = if total != 0.0 { k / total } else { k };
                    let v = k * (1u32 << PRECISION_BITS) as f64;
                    (if v < 0.0 { v - 0.5 } else { v + 0.5 }) as i32
                })
                .collect();
            (xmin, fixed)
        })
        .collect()
}

fn clip8(acc: i64) -> u8 {
    (acc >> PRECISION_BITS).clamp(0, 255) as u8
}

/// The output pixels to compute: columns `left..left + width`, rows `top..top + height`.
#[derive(Clone, Copy, Debug)]
pub struct Window {
    pub left: usize,
    pub top: usize,
    pub width: usize,
    pub height: usize,
}

/// Resamples interleaved RGB `src` (w×h) to nw×nh and returns only `window` of the result
/// (`height × width × 3` bytes): horizontal pass, 8-bit intermediate, then vertical pass, as PIL's
/// `ImagingResample` does for RGB images. Requires the window inside nw×nh.
pub fn resize_bicubic_window(
    src: &[u8],
    w: usize,
    h: usize,
    nw: usize,
    nh: usize,
    window: Window,
) -> Vec<u8> {
    let Window { left, top, width: size, height } = window;
    let half = 1i64 << (PRECISION_BITS - 1);
    // Horizontal pass: every input row, the window's columns only (width × h × 3 bytes).
    let horizontal = if nw == w {
        src.chunks_exact(w * 3).flat_map(|row| &row[left * 3..(left + size) * 3]).copied().collect()
    } else {
        let cx = coefficients(w, nw, left..left + size);
        let mut tmp = vec![0u8; size * h * 3];
        for y in 0..h {
            for (xx, (xmin, k)) in cx.iter().enumerate() {
                for c in 0..3 {
                    let mut acc = half;
                    for (i, &kk) in k.iter().enumerate() {
                        acc += src[(y * w + xmin + i) * 3 + c] as i64 * kk as i64;
                    }
                    tmp[(y * size + xx) * 3 + c] = clip8(acc);
                }
            }
        }
        tmp
    };
    let row = size * 3;
    if nh == h {
        return horizontal[top * row..(top + height) * row].to_vec();
    }
    let cy = coefficients(h, nh, top..top + height);
    let mut out = vec![0u8; height * row];
    for (yy, (ymin, k)) in cy.iter().enumerate() {
        for x in 0..row {
            let mut acc = half;
            for (i, &kk) in k.iter().enumerate() {
                acc += horizontal[(ymin + i) * row + x] as i64 * kk as i64;
            }
            out[yy * row + x] = clip8(acc);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_size_and_crop_follow_torchvision() {
        assert_eq!(resized_size(640, 480), (396, 297));
        assert_eq!(resized_size(300, 1000), (297, 990));
        assert_eq!(crop_offset(297), 18); // 37/2 = 18.5 rounds to even 18
        assert_eq!(crop_offset(299), 20); // 39/2 = 19.5 rounds to even 20
        assert_eq!(crop_offset(396), 68);
    }

    #[test]
    fn constant_image_stays_constant_and_normalises_to_the_expected_value() {
        let img = RgbImage::from_pixel(400, 300, image::Rgb([255, 127, 0]));
        let x = to_input(&img).unwrap();
        let n = IMAGE_SIZE * IMAGE_SIZE;
        assert_eq!(x.len(), 3 * n);
        assert!(x[..n].iter().all(|&v| (v - 128.0 / 128.0).abs() < 1e-5));
        assert!(x[n..2 * n].iter().all(|&v| v.abs() < 1e-5));
        assert!(x[2 * n..].iter().all(|&v| (v + 127.0 / 128.0).abs() < 1e-5));
    }

    #[test]
    fn a_window_of_the_resize_equals_the_same_window_of_the_full_resize() {
        let (w, h) = (41, 29);
        let src: Vec<u8> = (0..w * h * 3).map(|i| ((i * 7919 + i / 3 * 31) % 251) as u8).collect();
        for (nw, nh) in [(53, 37), (41, 17), (20, 29), (90, 11)] {
            let full = resize_bicubic_window(
                &src,
                w,
                h,
                nw,
                nh,
                Window { left: 0, top: 0, width: nw, height: nh },
            );
            let (left, top, width, height) = (nw / 3, nh / 4, nw / 2, nh / 2);
            let part =
                resize_bicubic_window(&src, w, h, nw, nh, Window { left, top, width, height });
            for y in 0..height {
                let want = &full[((top + y) * nw + left) * 3..((top + y) * nw + left + width) * 3];
                assert_eq!(&part[y * width * 3..(y + 1) * width * 3], want, "{nw}x{nh}, row {y}");
            }
        }
    }

    #[test]
    fn sizes_outside_the_bounds_are_refused_before_decoding() {
        assert!(size_refusal(640, 480).is_none());
        assert!(size_refusal(100, 2000).is_none()); // 20:1 is allowed
        assert!(size_refusal(100, 2001).unwrap().contains("aspect ratio"));
        assert!(size_refusal(1, 60_000).unwrap().contains("exceeds 16384"));
        assert!(size_refusal(10_000, 10_000).unwrap().contains("pixels"));
        assert!(size_refusal(0, 5).unwrap().contains("no pixels"));
        let sliver = RgbImage::new(3, 1000);
        assert!(to_input(&sliver).unwrap_err().contains("aspect ratio"));
    }
}
