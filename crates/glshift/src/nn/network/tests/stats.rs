//! BatchNorm statistics and frozen evaluation read their input rows where they are: the same
//! bits as on a gathered copy.

use ndarray::{Array2, Axis};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use super::super::*;
use crate::nn::test_support::random_matrix;

fn bits(stats: &[Option<BnStats<f32>>]) -> Vec<Option<(Vec<u32>, Vec<u32>)>> {
    let b = |a: &ndarray::Array1<f32>| a.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
    stats.iter().map(|s| s.as_ref().map(|s| (b(&s.mean), b(&s.rstd)))).collect()
}

#[test]
fn statistics_of_selected_rows_equal_those_of_their_copy_at_every_block_size() {
    for batch_norm in [true, false] {
        let cfg = NetworkConfig { hidden: vec![16, 8], batch_norm, ..Default::default() };
        let net = Network::<f32>::new(10, 3, &cfg, 3).unwrap();
        let x: Array2<f32> =
            random_matrix(50, 10, &mut ChaCha8Rng::seed_from_u64(2)).mapv(|v| v as f32);
        let rows: Vec<usize> = (0..50).filter(|i| i % 4 != 1).collect();
        let copy = net.batch_norm_stats(x.select(Axis(0), &rows).view());
        assert_eq!(copy.iter().any(Option::is_some), batch_norm);
        for block in [1, 3, 7, 37, 38, 1000] {
            let direct = net.g.batch_norm_stats_rows_blocked(x.view(), &rows, block);
            assert_eq!(
                bits(&direct),
                bits(&copy),
                "batch_norm {batch_norm}, {block} rows per block"
            );
        }
        assert_eq!(bits(&net.batch_norm_stats_rows(x.view(), &rows)), bits(&copy));
        // Frozen evaluation of a view (here a row slice) equals that of an owned copy.
        let part = x.slice(ndarray::s![5..40, ..]);
        let (za, la) = net.eval_frozen(part, &copy);
        let (zb, lb) = net.eval_frozen(part.to_owned().view(), &copy);
        assert_eq!((za, la), (zb, lb));
    }
}
