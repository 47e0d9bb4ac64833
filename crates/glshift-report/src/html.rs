//! A small builder for self-contained HTML pages: escaped text, tables, and figures embedded
//! as base64 `data:` URIs (the page opens without any other file).

use base64::Engine;

use crate::figure::Figure;

/// Escapes `&`, `<`, `>`, `"` and `'`.
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for ch in s.chars() {
        match ch {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// `x` with `digits` decimals, "–" for None or a non-finite value.
pub fn num(x: Option<f64>, digits: usize) -> String {
    match x {
        Some(v) if v.is_finite() => format!("{v:.digits$}"),
        Some(v) if v.is_infinite() => "∞".into(),
        _ => "–".into(),
    }
}

/// `x` as a percentage with one decimal.
pub fn pct(x: Option<f64>) -> String {
    num(x.map(|v| 100.0 * v), 1)
}

const STYLE: &str = "body{font-family:'DejaVu Sans',Arial,sans-serif;max-width:1100px;margin:24px auto;padding:0 16px;color:#222}\
h1{font-size:1.5em}h2{font-size:1.2em;margin-top:1.8em;border-bottom:1px solid #ccc}\
table{border-collapse:collapse;margin:8px 0;font-size:0.92em}th,td{border:1px solid #ccc;padding:3px 8px;text-align:right}\
th{background:#f0f0f0}td.l,th.l{text-align:left}.verdict{padding:8px 12px;background:#f6f6e8;border-left:4px solid #b8b800}\
figure{margin:16px 0}figure img{max-width:100%;border:1px solid #ddd}figcaption{font-size:0.9em;color:#444}\
pre{background:#f6f6f6;padding:8px;overflow-x:auto;font-size:0.85em}.note{color:#555;font-size:0.9em}";

/// A page under construction.
pub struct Page {
    body: String,
    title: String,
}

impl Page {
    pub fn new(title: &str) -> Self {
        Page { body: format!("<h1>{}</h1>\n", esc(title)), title: title.to_string() }
    }

    pub fn h2(&mut self, text: &str) {
        self.body.push_str(&format!("<h2>{}</h2>\n", esc(text)));
    }

    /// A paragraph of plain (escaped) text with an optional CSS class.
    pub fn para(&mut self, text: &str, class: Option<&str>) {
        match class {
            Some(c) => self.body.push_str(&format!("<p class=\"{c}\">{}</p>\n", esc(text))),
            None => self.body.push_str(&format!("<p>{}</p>\n", esc(text))),
        }
    }

    /// A table; the first column is left-aligned (row labels). Cells are escaped.
    pub fn table(&mut self, header: &[String], rows: &[Vec<String>]) {
        let mut t = String::from("<table>\n<tr>");
        for (j, h) in header.iter().enumerate() {
            t.push_str(&format!("<th{}>{}</th>", if j == 0 { " class=\"l\"" } else { "" }, esc(h)));
        }
        t.push_str("</tr>\n");
        for row in rows {
            t.push_str("<tr>");
            for (j, cell) in row.iter().enumerate() {
                t.push_str(&format!(
                    "<td{}>{}</td>",
                    if j == 0 { " class=\"l\"" } else { "" },
                    esc(cell)
                ));
            }
            t.push_str("</tr>\n");
        }
        t.push_str("</table>\n");
        self.body.push_str(&t);
    }

    /// The figure's PNG inline, with its caption and a link to the SVG file at `svg_href`.
    pub fn figure(&mut self, fig: &Figure, svg_href: &str) {
        let data = base64::engine::general_purpose::STANDARD.encode(&fig.png);
        self.body.push_str(&format!(
            "<figure id=\"{id}\"><img alt=\"{alt}\" width=\"{w}\" height=\"{h}\" src=\"data:image/png;base64,{data}\">\
             <figcaption>{cap} (<a href=\"{svg}\">SVG</a>)</figcaption></figure>\n",
            id = esc(&fig.name),
            alt = esc(&fig.caption),
            w = fig.width,
            h = fig.height,
            cap = esc(&fig.caption),
            svg = esc(svg_href),
        ));
    }

    /// Collapsible preformatted text (e.g. the configuration as JSON).
    pub fn details(&mut self, summary: &str, pre: &str) {
        self.body.push_str(&format!(
            "<details><summary>{}</summary><pre>{}</pre></details>\n",
            esc(summary),
            esc(pre)
        ));
    }

    pub fn finish(self) -> String {
        format!(
            "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{}</title><style>{STYLE}</style></head>\n<body>\n{}</body></html>\n",
            esc(&self.title),
            self.body
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_escaped_everywhere() {
        let mut p = Page::new("a<b");
        p.para("x & y", None);
        p.table(&["<th>".into()], &[vec!["\"q\"".into()]]);
        let html = p.finish();
        assert!(
            html.contains("a&lt;b")
                && html.contains("x &amp; y")
                && html.contains("&lt;th&gt;")
                && html.contains("&quot;q&quot;")
        );
        assert!(!html.contains("<b>"));
    }

    #[test]
    fn figures_are_embedded_as_data_uris() {
        let fig = Figure {
            name: "f".into(),
            caption: "c".into(),
            width: 1,
            height: 1,
            png: vec![1, 2, 3],
            svg: String::new(),
        };
        let mut p = Page::new("t");
        p.figure(&fig, "figures/f.svg");
        assert!(p.finish().contains("src=\"data:image/png;base64,AQID\""));
    }

    #[test]
    fn numbers_render_missing_values_as_dashes() {
        assert_eq!(num(None, 2), "–");
        assert_eq!(num(Some(f64::NAN), 2), "–");
        assert_eq!(num(Some(1.2345), 2), "1.23");
        assert_eq!(pct(Some(0.5)), "50.0");
    }
}
