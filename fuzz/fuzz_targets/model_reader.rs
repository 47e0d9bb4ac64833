//! Any bytes given to the model reader (`glshift predict --model`), with and without its
//! checksum check: `Ok` or a `glshift::Error` naming the file, never a panic or a huge
//! allocation; a model that loads predicts finite probabilities for a row of zeros.
#![no_main]

use std::path::Path;

use glshift::model::FittedModel;
use libfuzzer_sys::fuzz_target;
use ndarray::Array2;

fuzz_target!(|data: &[u8]| {
    let path = Path::new("fuzz.glshift");
    for parsed in
        [FittedModel::from_bytes(data, path), FittedModel::from_bytes_unverified(data, path)]
    {
        match parsed {
            Ok(model) => {
                let x = Array2::<f32>::zeros((1, model.input_dim()));
                if let Ok(p) = model.predict_proba(x.view()) {
                    assert_eq!(p.dim(), (1, model.n_classes()));
                    assert!(p.iter().all(|v| v.is_finite()), "{p:?}");
                }
            }
            Err(e) => assert!(e.to_string().contains("fuzz.glshift"), "{e}"),
        }
    }
});
