//! Dev probe: features of one image, and the time of one batch forward.
use glshift_extract::{preprocess, EffNetLite2};
use std::path::Path;
fn main() {
    let args: Vec<String> = std::env::args().collect();
    let t = std::time::Instant::now();
    let net = EffNetLite2::load(Path::new(&args[1])).unwrap();
    eprintln!("load {:?}", t.elapsed());
    let mut xs = Vec::new();
    for p in &args[2..] { xs.extend(preprocess::load_input(Path::new(p)).unwrap()); }
    let n = args.len() - 2;
    std::fs::write("/tmp/ours_in.f32", xs.iter().flat_map(|f| f.to_le_bytes()).collect::<Vec<u8>>()).unwrap();
    let x = candle_core::Tensor::from_vec(xs, (n, 3, 260, 260), &candle_core::Device::Cpu).unwrap();
    for _ in 0..2 {
        let t = std::time::Instant::now();
        let f = net.features(&x).unwrap();
        eprintln!("forward of {n}: {:?}", t.elapsed());
        let v: Vec<Vec<f32>> = f.to_vec2().unwrap();
        println!("{:?}", &v[0][..8]);
        std::fs::write("/tmp/ours_feat.f32", v[0].iter().flat_map(|f| f.to_le_bytes()).collect::<Vec<u8>>()).unwrap();
    }
}
