//! Which CPU features the kernels may use: asked once, at run time, so one binary runs
//! everywhere and takes the fast path where the CPU has it.

use std::sync::atomic::{AtomicBool, Ordering};

/// Set by benchmarks (through [`crate::use_portable_kernel`]) to measure the portable
/// kernels on AVX2 machines.
static FORCE_PORTABLE: AtomicBool = AtomicBool::new(false);

/// Makes the blocked filters' kernels, and sector and ribbon filters made while it is set,
/// use their portable code even where AVX2 or AVX-512 is available. All give the same
/// answers.
pub(crate) fn set_force_portable(portable: bool) {
    FORCE_PORTABLE.store(portable, Ordering::Relaxed);
}

/// Whether this CPU has AVX2 (`is_x86_feature_detected!` caches its answer).
#[inline]
pub(crate) fn has_avx2() -> bool {
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    {
        std::arch::is_x86_feature_detected!("avx2")
    }
    #[cfg(not(all(target_arch = "x86_64", not(miri))))]
    {
        false
    }
}

/// Whether this CPU has the AVX-512 the kernels use: AVX-512F and AVX-512 VPOPCNTDQ (a
/// popcount of each 64-bit lane, which the ribbon's query needs), that is Intel from Ice Lake
/// and AMD from Zen 4 on (`is_x86_feature_detected!` caches its answer). Asking for both
/// also leaves out the first AVX-512 Xeons (Skylake-SP, Cascade Lake), whose clock slows
/// for a while after 512-bit work.
#[inline]
pub(crate) fn has_avx512_popcount() -> bool {
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    {
        std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512vpopcntdq")
    }
    #[cfg(not(all(target_arch = "x86_64", not(miri))))]
    {
        false
    }
}

/// Whether the AVX2 kernels are in use: the CPU has AVX2 and the portable ones are not
/// forced.
#[inline]
pub(crate) fn avx2_in_use() -> bool {
    has_avx2() && !FORCE_PORTABLE.load(Ordering::Relaxed)
}

/// Fails a test that compares a kernel with its portable twin when the AVX2 kernel cannot
/// run here but the run expects it to (`BLOOMKIT_REQUIRE_AVX2`, which CI sets on its x86-64
/// machines), rather than letting it pass on the portable kernel alone. Returns whether
/// the AVX2 kernel can be run.
#[cfg(test)]
pub(crate) fn avx2_for_test(test: &str) -> bool {
    let available = has_avx2();
    if !available {
        assert!(
            std::env::var_os("BLOOMKIT_REQUIRE_AVX2").is_none(),
            "{test}: BLOOMKIT_REQUIRE_AVX2 is set but this CPU (or build) has no AVX2, so \
             the AVX2 kernel cannot be checked"
        );
        eprintln!("{test}: no AVX2 here; only the portable kernel was checked");
    }
    available
}

/// [`avx2_for_test`] for the AVX-512 kernels (the sector filter's and the ribbon's, chosen
/// where [`has_avx512_popcount`] and AVX2 are): fails when this CPU lacks AVX2, AVX-512F or
/// AVX-512 VPOPCNTDQ but the run expects them (`BLOOMKIT_REQUIRE_AVX512`, which CI sets
/// where the CPU reports them), so a kernel the CPU could run is never left unchecked.
/// Returns whether the AVX-512 kernel can be run.
#[cfg(test)]
pub(crate) fn avx512_for_test(test: &str) -> bool {
    let available = has_avx2() && has_avx512_popcount();
    if !available {
        assert!(
            std::env::var_os("BLOOMKIT_REQUIRE_AVX512").is_none(),
            "{test}: BLOOMKIT_REQUIRE_AVX512 is set but this CPU (or build) lacks AVX2, \
             AVX-512F or AVX-512 VPOPCNTDQ, so the AVX-512 kernel cannot be checked"
        );
        eprintln!("{test}: no AVX-512 popcount here; the AVX-512 kernel was not checked");
    }
    available
}
