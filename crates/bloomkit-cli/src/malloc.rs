//! One setting of the C allocator, for the long-running server.
//!
//! glibc's malloc serves an allocation above its mmap threshold (128 KiB at start) with a
//! mapping of its own, returned to the kernel when freed. But each time such a block is
//! freed, glibc raises the threshold to that block's size (up to 32 MiB). A server that has
//! once freed a large buffer (a pipelined batch, a snapshot's write buffer, a filter loaded
//! from a dump) then carves later filters of about that size out of its heap arenas, where
//! the buffers freed around them stay resident. Measured with `scripts/bench_server.py`
//! (100 filters of 1,000,000 at 1%, 131.5 MiB of bits): the process grew by 135.4 MiB with
//! the moving threshold and by 132.3 MiB with it fixed at glibc's default, against
//! RedisBloom's 133.3 MiB.
//!
//! Fixing it costs a `mmap`/`munmap` pair per allocation of 128 KiB or more, which the
//! server makes rarely (a filter's bits, an unusually large request).

/// Fixes glibc's mmap threshold at its default, turning its dynamic growth off; returns
/// whether the allocator took the setting (always `false` off glibc, where there is nothing
/// to fix).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
pub fn fix_mmap_threshold() -> bool {
    /// glibc's initial threshold. Setting it at all is what stops the adjustment.
    const THRESHOLD: libc::c_int = 128 * 1024;
    // SAFETY: `mallopt` takes two plain integers and changes only the allocator's own
    // parameters, under its own locks; it reads or writes no memory of ours and is
    // documented as callable at any time. M_MMAP_THRESHOLD accepts any value up to
    // HEAP_MAX/2 (32 MiB on 64-bit), so 128 KiB is valid.
    #[allow(unsafe_code)]
    let accepted = unsafe { libc::mallopt(libc::M_MMAP_THRESHOLD, THRESHOLD) };
    accepted == 1
}

/// Elsewhere there is no glibc threshold to fix.
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub fn fix_mmap_threshold() -> bool {
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_allocator_takes_the_setting_and_still_works() {
        let accepted = fix_mmap_threshold();
        assert_eq!(accepted, cfg!(all(target_os = "linux", target_env = "gnu")));
        // Allocations on both sides of the threshold, freed in an order that would have
        // raised it, still behave.
        let mut blocks: Vec<Vec<u8>> = (0..8).map(|i| vec![i as u8; 100_000 << i]).collect();
        blocks.swap(0, 7);
        for (i, b) in blocks.iter().enumerate() {
            assert!(b.iter().all(|&x| x == b[0]), "{i}");
        }
        drop(blocks);
        let again = vec![7u8; 1_400_000];
        assert_eq!(again.iter().map(|&x| x as u64).sum::<u64>(), 7 * 1_400_000);
    }
}
