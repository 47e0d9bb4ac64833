//! Any bytes given to the weights reader (`glshift extract --weights`): the legacy `torch.save`
//! parser, then the network builder on whatever parses. `Ok` or an error, never a panic, a
//! stack overflow or an allocation above the run's limit; a parsed tensor holds exactly the
//! elements its shape says.
#![no_main]

use std::path::Path;

use glshift_extract::pth::parse_state_dict;
use glshift_extract::EffNetLite2;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(dict) = parse_state_dict(data) {
        for t in dict.values() {
            assert_eq!(t.data.len(), t.shape.iter().product::<usize>());
        }
        let path = Path::new("fuzz.pth");
        if let Err(e) = EffNetLite2::from_state_dict(&dict, path) {
            assert!(e.to_string().contains("fuzz.pth"), "{e}");
        }
    }
});
