//! A figure rendered twice from one drawing routine: a PNG (bitmap backend, text rasterised
//! from the embedded DejaVu Sans, so no system font is read) and an SVG.

use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::error::{Error, Result};

/// The embedded font (DejaVu Sans, Bitstream Vera licence: `assets/LICENSE-DejaVu.txt`).
static FONT: &[u8] = include_bytes!("../assets/DejaVuSans.ttf");

/// Family name every figure uses; registered once with plotters' ab_glyph text renderer.
pub const FAMILY: &str = "sans-serif";

fn register_font() -> Result<()> {
    static DONE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    let ok = *DONE.get_or_init(|| {
        plotters::style::register_font(FAMILY, FontStyle::Normal, FONT).is_ok()
            && plotters::style::register_font(FAMILY, FontStyle::Bold, FONT).is_ok()
    });
    if ok {
        Ok(())
    } else {
        Err(Error::Plot {
            figure: "(font)".into(),
            reason: "the embedded DejaVu Sans could not be parsed".into(),
        })
    }
}

/// A rendered figure.
#[derive(Clone, Debug)]
pub struct Figure {
    /// File stem, e.g. `dst_heatmap`.
    pub name: String,
    /// Caption for the HTML page.
    pub caption: String,
    pub width: u32,
    pub height: u32,
    pub png: Vec<u8>,
    pub svg: String,
}

/// Error type of one drawing routine on backend `DB`.
pub type DrawResult<DB> =
    std::result::Result<(), DrawingAreaErrorKind<<DB as DrawingBackend>::ErrorType>>;

/// A drawing routine that works on any plotters backend.
pub trait Draw {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult<DB>;
}

fn plot_err(name: &str, e: impl std::fmt::Display) -> Error {
    Error::Plot { figure: name.to_string(), reason: e.to_string() }
}

/// Renders `d` at `width × height` pixels into a PNG and an SVG.
pub fn render(
    name: &str,
    caption: &str,
    (width, height): (u32, u32),
    d: &impl Draw,
) -> Result<Figure> {
    register_font()?;
    let mut rgb = vec![0u8; width as usize * height as usize * 3];
    {
        let root = BitMapBackend::with_buffer(&mut rgb, (width, height)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| plot_err(name, e))?;
        d.draw(&root).map_err(|e| plot_err(name, e))?;
        root.present().map_err(|e| plot_err(name, e))?;
    }
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (width, height)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| plot_err(name, e))?;
        d.draw(&root).map_err(|e| plot_err(name, e))?;
        root.present().map_err(|e| plot_err(name, e))?;
    }
    let png = encode_png(&rgb, width, height).map_err(|e| plot_err(name, e))?;
    Ok(Figure { name: name.to_string(), caption: caption.to_string(), width, height, png, svg })
}

/// 8-bit RGB PNG of a row-major buffer.
fn encode_png(
    rgb: &[u8],
    width: u32,
    height: u32,
) -> std::result::Result<Vec<u8>, png::EncodingError> {
    let mut out = Vec::new();
    {
        let mut enc = png::Encoder::new(&mut out, width, height);
        enc.set_color(png::ColorType::Rgb);
        enc.set_depth(png::BitDepth::Eight);
        enc.set_compression(png::Compression::Best);
        let mut w = enc.write_header()?;
        w.write_image_data(rgb)?;
    }
    Ok(out)
}

/// Text style in the embedded family.
pub fn font(size: f64) -> TextStyle<'static> {
    (FAMILY, size).into_font().into()
}

/// Class colours: Tableau 10, then Tableau 20's light tones, cycling beyond 20 classes.
pub fn class_color(k: usize) -> RGBColor {
    const P: [(u8, u8, u8); 20] = [
        (31, 119, 180),
        (255, 127, 14),
        (44, 160, 44),
        (214, 39, 40),
        (148, 103, 189),
        (140, 86, 75),
        (227, 119, 194),
        (127, 127, 127),
        (188, 189, 34),
        (23, 190, 207),
        (174, 199, 232),
        (255, 187, 120),
        (152, 223, 138),
        (255, 152, 150),
        (197, 176, 213),
        (196, 156, 148),
        (247, 182, 210),
        (199, 199, 199),
        (219, 219, 141),
        (158, 218, 229),
    ];
    let (r, g, b) = P[k % P.len()];
    RGBColor(r, g, b)
}

/// Category names centred under slots k + 0.5 of a chart whose x axis is 0..n, drawn just
/// below height `y` (the bottom of the y range).
pub fn draw_category_labels<DB: DrawingBackend>(
    chart: &mut ChartContext<'_, DB, Cartesian2d<RangedCoordf64, RangedCoordf64>>,
    names: &[String],
    y: f64,
) -> DrawResult<DB> {
    let style = font(11.0).pos(Pos::new(HPos::Center, VPos::Top));
    chart.draw_series(names.iter().enumerate().map(|(k, n)| {
        EmptyElement::at((k as f64 + 0.5, y)) + Text::new(n.clone(), (0, 6), style.clone())
    }))?;
    Ok(())
}

/// `s` cut to `n` characters (with "…" when cut), for axis labels.
pub fn short_label(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(n.saturating_sub(1)).collect();
        t.push('…');
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Cross;
    impl Draw for Cross {
        fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult<DB> {
            root.draw(&PathElement::new(vec![(0, 0), (99, 59)], BLACK.stroke_width(3)))?;
            root.draw(&Text::new("glshift", (10, 30), font(16.0)))
        }
    }

    #[test]
    fn render_gives_a_png_and_an_svg_of_the_requested_size() {
        let f = render("cross", "a test", (100, 60), &Cross).unwrap();
        let dec = png::Decoder::new(std::io::Cursor::new(&f.png)).read_info().unwrap();
        assert_eq!((dec.info().width, dec.info().height), (100, 60));
        assert!(
            f.svg.contains("<svg") && f.svg.contains("width=\"100\"") && f.svg.contains("glshift")
        );
    }

    #[test]
    fn short_label_cuts_long_names_only() {
        assert_eq!(short_label("mug", 6), "mug");
        assert_eq!(short_label("calculator", 6), "calcu…");
    }
}
