//! A software prefetch: ask for a cache line now, use it a little later.
//!
//! A query of a large filter is one cache miss, about 100 ns of waiting. A core can have a
//! dozen misses outstanding at once, but a plain loop over keys issues them one at a time:
//! each query's load sits behind the previous query's dependent work. The batched queries
//! (`contains_many` and friends) first compute every line of a batch and prefetch it, so the
//! misses overlap, and then probe lines that are already arriving.
//!
//! This is the crate's only `unsafe`: the intrinsic takes a raw pointer. It pays (the
//! batched-query figures in `BENCHMARKS.md`), and it is sound for any address, since a
//! prefetch is a hint that never faults; ours are in bounds besides.

/// Hints that the cache line holding `value` will be read soon. Does nothing where there is
/// no prefetch instruction to use (and under Miri, which does not model caches).
#[inline(always)]
pub(crate) fn prefetch_read<T>(value: &T) {
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        let ptr = value as *const T as *const i8;
        // SAFETY: `_mm_prefetch` only needs SSE, which every x86_64 CPU has (it is in the
        // target's baseline features), and it never dereferences the pointer in a way that
        // can fault or be observed: a prefetch of any address is a no-op at worst. The
        // pointer comes from a live reference, so it is in bounds in any case.
        #[allow(unsafe_code)]
        unsafe {
            _mm_prefetch::<_MM_HINT_T0>(ptr)
        };
    }
    #[cfg(not(all(target_arch = "x86_64", not(miri))))]
    {
        let _ = value;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Prefetching is invisible: the value is unchanged and nothing faults, at the edges of
    /// an allocation too.
    #[test]
    fn prefetch_is_harmless() {
        let v: Vec<u64> = (0..1000).collect();
        for x in [&v[0], &v[500], &v[999]] {
            prefetch_read(x);
        }
        assert_eq!(v.iter().sum::<u64>(), 999 * 1000 / 2);
        let one = Box::new(7u8);
        prefetch_read(&*one);
        assert_eq!(*one, 7);
    }
}
