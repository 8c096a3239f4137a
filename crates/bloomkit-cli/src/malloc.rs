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

    /// The tests here allocate large blocks and read process-wide allocator statistics:
    /// one at a time, so that one's blocks do not show up in the other's figures.
    static ALLOCATOR: std::sync::Mutex<()> = std::sync::Mutex::new(());

    #[test]
    fn the_allocator_takes_the_setting_and_still_works() {
        let _one_at_a_time = ALLOCATOR.lock().unwrap_or_else(|e| e.into_inner());
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

    /// What the setting is for: after a large block is freed, a block of a size between the
    /// default and the freed one is still mapped on its own (with glibc's moving threshold
    /// it would come out of the heap, and `hblkhd` would not grow).
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    #[test]
    fn a_freed_large_block_does_not_move_the_threshold() {
        let _one_at_a_time = ALLOCATOR.lock().unwrap_or_else(|e| e.into_inner());
        assert!(fix_mmap_threshold());
        let mapped = || {
            // SAFETY: `mallinfo2` takes no arguments and returns the allocator's statistics
            // by value, read under its own locks; it touches no memory of ours.
            #[allow(unsafe_code)]
            let info = unsafe { libc::mallinfo2() };
            info.hblkhd
        };
        // Allocated (`black_box`: the optimizer may not elide it), then freed: glibc's
        // dynamic rule would raise the threshold to its 4 MiB here.
        let big = std::hint::black_box(vec![1u8; 4 << 20]);
        drop(big);
        // The count is the whole process's: a test on another thread may free a mapped block
        // of its own between the two readings (172,032 bytes once, in CI). A block from the
        // heap never shows the 2 MiB, so a few tries tell the two apart.
        let mut seen = Vec::new();
        for _ in 0..5 {
            let before = mapped();
            let block = std::hint::black_box(vec![2u8; 2 << 20]);
            let after = mapped();
            drop(block);
            if after >= before + (2 << 20) {
                return;
            }
            seen.push((before, after));
        }
        panic!("a 2 MiB block was not mapped on its own: (before, after) bytes mapped {seen:?}");
    }
}
