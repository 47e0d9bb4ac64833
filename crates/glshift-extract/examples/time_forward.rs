//! Times one EfficientNet-Lite2 forward on one image (the "conv-heavy forward" of docs/extract.md):
//! `cargo run --release -p glshift-extract --example time_forward -- WEIGHTS IMAGE [REPEATS]`.

// Product code: no function over clippy.toml's 80 lines (test code may be longer).
#![cfg_attr(not(test), warn(clippy::too_many_lines))]

use std::path::Path;
use std::time::Instant;

use glshift_extract::{extract, preprocess, EffNetLite2};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 3 {
        return Err("usage: time_forward WEIGHTS IMAGE [REPEATS]".into());
    }
    let repeats: usize = args.get(3).map_or(Ok(5), |r| r.parse())?;
    let t = Instant::now();
    let net = EffNetLite2::load(Path::new(&args[1]))?;
    println!("load weights: {:.0} ms", t.elapsed().as_secs_f64() * 1e3);
    let x = preprocess::load_input(Path::new(&args[2]))?;
    let mut best = f64::INFINITY;
    for _ in 0..repeats {
        let t = Instant::now();
        let f = extract::image_features(&net, x.clone())?;
        best = best.min(t.elapsed().as_secs_f64());
        assert_eq!(f.len(), 1280);
    }
    println!("one-image forward: best of {repeats} = {:.0} ms", best * 1e3);
    Ok(())
}
