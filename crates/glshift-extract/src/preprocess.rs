//! Image → network input, as the reference extraction did it with PIL and torchvision:
//! decode to 8-bit RGB, resize the shorter side to 297 with PIL's bicubic filter (antialiased,
//! a = −0.5, 8-bit fixed-point, horizontal pass then vertical), centre-crop 260×260 (offset
//! rounded half-to-even, as Python's `round`), scale to [0, 1] and normalise each channel with
//! mean 127/255 and std 128/255, i.e. `(x − 127) / 128`. Output: `(3, 260, 260)` f32, C order.

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

/// Decodes `path` (JPEG or PNG, by content) into 8-bit RGB; grey and alpha images are converted
/// as PIL's `convert("RGB")` does (grey replicated, alpha dropped).
pub fn decode(path: &Path) -> Result<RgbImage> {
    let err = |reason: String| Error::Image { path: path.to_path_buf(), reason };
    let reader = image::ImageReader::open(path).map_err(|e| err(e.to_string()))?;
    let reader = reader.with_guessed_format().map_err(|e| err(e.to_string()))?;
    let img = reader.decode().map_err(|e| err(e.to_string()))?;
    Ok(img.to_rgb8())
}

/// Reads and preprocesses one image file into the `(3, 260, 260)` network input.
pub fn load_input(path: &Path) -> Result<Vec<f32>> {
    let img = decode(path)?;
    if img.width() == 0 || img.height() == 0 {
        return Err(Error::Image { path: path.to_path_buf(), reason: "image has no pixels".into() });
    }
    Ok(to_input(&img))
}

/// Resize + centre crop + normalise an RGB image into the `(3, 260, 260)` network input.
pub fn to_input(img: &RgbImage) -> Vec<f32> {
    let (w, h) = (img.width() as usize, img.height() as usize);
    let (nw, nh) = resized_size(w, h);
    let resized = resize_bicubic(img.as_raw(), w, h, nw, nh);
    let top = crop_offset(nh);
    let left = crop_offset(nw);
    let n = IMAGE_SIZE * IMAGE_SIZE;
    let mut out = vec![0f32; 3 * n];
    for y in 0..IMAGE_SIZE {
        for x in 0..IMAGE_SIZE {
            let p = ((top + y) * nw + left + x) * 3;
            for c in 0..3 {
                out[c * n + y * IMAGE_SIZE + x] = (resized[p + c] as f32 / 255.0 - MEAN) / STD;
            }
        }
    }
    out
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

/// Fixed-point resampling weights for one axis: per output index, the first input index and
/// the integer weights (PIL's `precompute_coeffs` + `normalize_coeffs_8bpc`).
fn coefficients(in_size: usize, out_size: usize) -> Vec<(usize, Vec<i32>)> {
    let scale = in_size as f64 / out_size as f64;
    let filterscale = scale.max(1.0);
    let support = 2.0 * filterscale;
    (0..out_size)
        .map(|xx| {
            let center = (xx as f64 + 0.5) * scale;
            let xmin = ((center - support + 0.5) as i64).max(0) as usize;
            let xmax = ((center + support + 0.5) as i64).min(in_size as i64) as usize;
            let w: Vec<f64> = (xmin..xmax).map(|x| bicubic((x as f64 - center + 0.5) / filterscale)).collect();
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

/// Resamples interleaved RGB `src` (w×h) to nw×nh: horizontal pass, 8-bit intermediate,
/// then vertical pass, as PIL's `ImagingResample` does for RGB images.
pub fn resize_bicubic(src: &[u8], w: usize, h: usize, nw: usize, nh: usize) -> Vec<u8> {
    let half = 1i64 << (PRECISION_BITS - 1);
    let horizontal = if nw == w {
        src.to_vec()
    } else {
        let cx = coefficients(w, nw);
        let mut tmp = vec![0u8; nw * h * 3];
        for y in 0..h {
            for (xx, (xmin, k)) in cx.iter().enumerate() {
                for c in 0..3 {
                    let mut acc = half;
                    for (i, &kk) in k.iter().enumerate() {
                        acc += src[(y * w + xmin + i) * 3 + c] as i64 * kk as i64;
                    }
                    tmp[(y * nw + xx) * 3 + c] = clip8(acc);
                }
            }
        }
        tmp
    };
    if nh == h {
        return horizontal;
    }
    let cy = coefficients(h, nh);
    let mut out = vec![0u8; nw * nh * 3];
    for (yy, (ymin, k)) in cy.iter().enumerate() {
        for x in 0..nw * 3 {
            let mut acc = half;
            for (i, &kk) in k.iter().enumerate() {
                acc += horizontal[(ymin + i) * nw * 3 + x] as i64 * kk as i64;
            }
            out[yy * nw * 3 + x] = clip8(acc);
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
        let x = to_input(&img);
        let n = IMAGE_SIZE * IMAGE_SIZE;
        assert_eq!(x.len(), 3 * n);
        assert!(x[..n].iter().all(|&v| (v - 128.0 / 128.0).abs() < 1e-5));
        assert!(x[n..2 * n].iter().all(|&v| v.abs() < 1e-5));
        assert!(x[2 * n..].iter().all(|&v| (v + 127.0 / 128.0).abs() < 1e-5));
    }
}
