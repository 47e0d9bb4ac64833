//! The network and its weights without `../shared`: every layer's output shape against the
//! architecture, wrong-architecture and damaged weights as errors, undecodable files skipped.
//! Uses a synthetic state_dict (all shapes of EfficientNet-Lite2, constant values).

use std::path::Path;

use glshift_extract::arch::{self, FEATURE_DIM, IMAGE_SIZE, STEM_CHANNELS};
use glshift_extract::pth::{RawTensor, StateDict};
use glshift_extract::{extract, walk, EffNetLite2, Error};

fn put(d: &mut StateDict, name: &str, shape: &[usize], value: f32) {
    let n = shape.iter().product();
    d.insert(name.to_string(), RawTensor { shape: shape.to_vec(), data: vec![value; n] });
}

fn put_conv_bn(d: &mut StateDict, conv: &str, bn: &str, shape: [usize; 4]) {
    let fan_in = (shape[1] * shape[2] * shape[3]) as f32;
    put(d, &format!("{conv}.weight"), &shape, 1.0 / fan_in);
    for (p, v) in [("weight", 1.0), ("bias", 0.1), ("running_mean", 0.0), ("running_var", 1.0)] {
        put(d, &format!("{bn}.{p}"), &[shape[0]], v);
    }
}

/// A state_dict with every EfficientNet-Lite2 parameter name and shape.
fn synthetic() -> StateDict {
    let mut d = StateDict::new();
    put_conv_bn(&mut d, "_conv_stem", "_bn0", [STEM_CHANNELS, 3, 3, 3]);
    for (i, b) in arch::blocks().iter().enumerate() {
        let p = format!("_blocks.{i}");
        if b.expand != 1 {
            put_conv_bn(
                &mut d,
                &format!("{p}._expand_conv"),
                &format!("{p}._bn0"),
                [b.c_mid(), b.c_in, 1, 1],
            );
        }
        let dw = [b.c_mid(), 1, b.kernel, b.kernel];
        put_conv_bn(&mut d, &format!("{p}._depthwise_conv"), &format!("{p}._bn1"), dw);
        put_conv_bn(
            &mut d,
            &format!("{p}._project_conv"),
            &format!("{p}._bn2"),
            [b.c_out, b.c_mid(), 1, 1],
        );
    }
    put_conv_bn(&mut d, "_conv_head", "_bn1", [FEATURE_DIM, arch::head_in_channels(), 1, 1]);
    d
}

#[test]
fn every_layer_output_has_the_shape_of_the_architecture() {
    let net = EffNetLite2::from_state_dict(&synthetic(), Path::new("synthetic.pth")).unwrap();
    let x = candle_core::Tensor::zeros(
        (1, 3, IMAGE_SIZE, IMAGE_SIZE),
        candle_core::DType::F32,
        &candle_core::Device::Cpu,
    )
    .unwrap();
    let mut seen: Vec<(String, Vec<usize>)> = Vec::new();
    let f = net
        .forward_observed(&x, &mut |name, dims| seen.push((name.to_string(), dims.to_vec())))
        .unwrap();
    assert_eq!(f.dims(), &[1, FEATURE_DIM]);
    let want = arch::layer_shapes();
    assert_eq!(seen.len(), want.len());
    for ((name, dims), (wname, wshape)) in seen.iter().zip(&want) {
        assert_eq!(name, wname);
        assert_eq!(&dims[1..], wshape, "layer {name}");
    }
    // Spot checks against the published Lite2 shapes.
    assert_eq!(want[0].1, [32, 130, 130]);
    assert_eq!(want.last().unwrap().1, [1280, 1, 1]);
    assert!(want.contains(&("blocks.20.depthwise".to_string(), [1248, 9, 9])));
}

#[test]
fn wrong_shape_or_missing_parameter_is_a_wrong_architecture_error_naming_both() {
    let mut d = synthetic();
    put(&mut d, "_blocks.4._depthwise_conv.weight", &[144, 1, 3, 3], 0.0);
    let e = EffNetLite2::from_state_dict(&d, Path::new("other.pth")).err().unwrap();
    assert!(matches!(e, Error::WrongArchitecture { .. }), "{e}");
    let msg = e.to_string();
    assert!(msg.contains("other.pth") && msg.contains("_blocks.4._depthwise_conv.weight"), "{msg}");
    let mut d = synthetic();
    d.remove("_conv_head.weight");
    let msg = EffNetLite2::from_state_dict(&d, Path::new("x.pth")).err().unwrap().to_string();
    assert!(msg.contains("_conv_head.weight is missing"), "{msg}");
    let mut d = synthetic();
    put(&mut d, "_blocks.21._bn2.bias", &[352], 0.0);
    let msg = EffNetLite2::from_state_dict(&d, Path::new("x.pth")).err().unwrap().to_string();
    assert!(msg.contains("more than 21 blocks"), "{msg}");
}

#[test]
fn garbage_or_missing_weights_file_is_an_error_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.pth");
    std::fs::write(&bad, b"this is not a torch file at all").unwrap();
    let e = EffNetLite2::load(&bad).err().unwrap();
    assert!(matches!(e, Error::WeightsFormat { .. }), "{e}");
    assert!(e.to_string().contains("bad.pth"), "{e}");
    let e = EffNetLite2::load(&dir.path().join("absent.pth")).err().unwrap();
    assert!(matches!(e, Error::WeightsIo { .. }) && e.to_string().contains("absent.pth"), "{e}");
}

#[test]
fn non_image_files_are_skipped_with_their_reason_and_images_are_kept() {
    let dir = tempfile::tempdir().unwrap();
    let cls = dir.path().join("dom/cls");
    std::fs::create_dir_all(&cls).unwrap();
    image::RgbImage::from_fn(40, 30, |x, y| image::Rgb([(x * 6) as u8, (y * 8) as u8, 90]))
        .save(cls.join("a.png"))
        .unwrap();
    std::fs::write(cls.join("b.jpg"), b"not a jpeg").unwrap();
    std::fs::write(cls.join("notes.txt"), b"hello").unwrap();
    let layout = walk::walk(dir.path()).unwrap();
    let net = EffNetLite2::from_state_dict(&synthetic(), Path::new("synthetic.pth")).unwrap();
    let mut done = 0;
    let f = extract::extract_domain(&net, &layout.domains[0], &mut |k| done += k).unwrap();
    assert_eq!(done, 3);
    assert_eq!(f.features.dim(), (1, FEATURE_DIM));
    assert_eq!(f.labels, Some(vec![0]));
    let skipped: Vec<&str> = f.skipped.iter().map(|s| s.path.rsplit('/').next().unwrap()).collect();
    assert_eq!(skipped, ["b.jpg", "notes.txt"]);
    assert!(f.skipped.iter().all(|s| !s.reason.is_empty()));
    // Only undecodable files: an error naming the domain.
    std::fs::remove_file(cls.join("a.png")).unwrap();
    let layout = walk::walk(dir.path()).unwrap();
    let e = extract::extract_domain(&net, &layout.domains[0], &mut |_| {}).unwrap_err();
    assert!(e.to_string().contains("domain dom"), "{e}");
}
