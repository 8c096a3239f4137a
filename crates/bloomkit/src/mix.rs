//! Integer mixing shared by the static filters, which derive their probes from a key hash
//! remixed with a construction seed.

/// The murmur3 64-bit finalizer: a bijection whose every output bit depends on every input
/// bit.
#[inline]
pub(crate) fn fmix64(mut x: u64) -> u64 {
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^= x >> 33;
    x = x.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    x ^ (x >> 33)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pinned: the ribbon and fuse file formats derive their probes through it.
    #[test]
    fn golden_values() {
        assert_eq!(fmix64(0), 0);
        assert_eq!(fmix64(1), 0xb456_bcfc_34c2_cb2c);
        assert_eq!(fmix64(u64::MAX), 0x64b5_720b_4b82_5f21);
    }
}
