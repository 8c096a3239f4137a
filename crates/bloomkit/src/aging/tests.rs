//! Unit tests: the per-generation rate, in-place rotation, parameters.

use super::*;

#[test]
fn generation_rate_composes_to_the_target() {
    for &p in &[0.5, 0.1, 0.01, 1e-4, 1e-9, 1e-15] {
        for g in [1u32, 2, 3, 8, 64] {
            let q = AgingBloomFilter::generation_fp_rate(p, g).unwrap();
            assert!(q > 0.0 && q <= p);
            // Slightly above the plain split p / G (Bernoulli's inequality).
            assert!(q >= p / g as f64 * (1.0 - 1e-12), "p={p} g={g}: {q}");
            let whole = -(g as f64 * (-q).ln_1p()).exp_m1();
            assert!((whole / p - 1.0).abs() < 1e-9, "p={p} g={g}: {whole}");
        }
    }
}

#[test]
fn rotation_recycles_the_oldest_generation_in_place() {
    let mut f = AgingBloomFilter::builder(0, 0.01)
        .num_bits_per_generation(4096)
        .num_hashes(6)
        .generations(3)
        .build()
        .unwrap();
    let oldest = f.generations[2].lines().lines().as_ptr();
    f.insert("a");
    f.rotate();
    // The recycled memory is the new newest generation, and it is empty.
    assert_eq!(f.generations[0].lines().lines().as_ptr(), oldest);
    assert_eq!(f.generations[0].count_ones(), 0);
    assert!(f.generations[1].contains("a"));
}

#[test]
fn is_send_sync_and_debug_shows_the_shape_only() {
    fn send_sync<T: Send + Sync + Clone + fmt::Debug + PartialEq>() {}
    send_sync::<AgingBloomFilter>();
    let f = AgingBloomFilter::new(1_000_000, 0.01).unwrap();
    assert!(format!("{f:?}").len() < 200);
}

#[test]
fn bad_params_are_errors() {
    for g in [0u32, 65, u32::MAX] {
        assert!(matches!(
            AgingBloomFilter::builder(100, 0.01).generations(g).build(),
            Err(Error::InvalidParameter {
                name: "generations",
                ..
            })
        ));
        assert!(matches!(
            AgingBloomFilter::builder(0, 0.01)
                .num_bits_per_generation(512)
                .num_hashes(6)
                .generations(g)
                .build(),
            Err(Error::InvalidParameter { .. })
        ));
    }
    for p in [0.0, 1.0, -1.0, f64::NAN, f64::INFINITY] {
        assert!(matches!(
            AgingBloomFilter::new(10, p),
            Err(Error::InvalidFpRate { .. })
        ));
    }
    assert!(matches!(
        AgingBloomFilter::new(10, 1e-30),
        Err(Error::FpRateTooSmall { .. })
    ));
    assert!(matches!(
        AgingBloomFilter::builder(0, 0.01)
            .num_bits_per_generation(0)
            .num_hashes(6)
            .generations(2)
            .build(),
        Err(Error::ZeroBits)
    ));
    assert!(matches!(
        AgingBloomFilter::builder(0, 0.01)
            .num_bits_per_generation(512)
            .num_hashes(0)
            .generations(2)
            .build(),
        Err(Error::InvalidNumHashes { .. })
    ));
    assert!(matches!(
        AgingBloomFilter::builder(0, 0.01)
            .num_bits_per_generation(u64::MAX)
            .num_hashes(6)
            .generations(2)
            .build(),
        Err(Error::TooLarge { .. }) | Err(Error::OutOfMemory { .. })
    ));
    assert!(matches!(
        AgingBloomFilter::new(u64::MAX / 4, 0.01),
        Err(Error::TooLarge { .. }) | Err(Error::OutOfMemory { .. })
    ));
    assert_eq!(
        AgingBloomFilter::new(0, 0.01).unwrap(),
        AgingBloomFilter::new(1, 0.01).unwrap()
    );
}
