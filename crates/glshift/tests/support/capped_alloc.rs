//! The system allocator, failing (null: Rust then aborts) any single request above
//! [`MAX_ALLOCATION`], like libFuzzer's `-malloc_limit_mb`: the fuzz-replay tests of the data
//! readers (`crates/glshift/tests/fuzz_regressions.rs`) and of the extraction
//! (`crates/glshift-extract/tests/fuzz_regressions.rs`, by `#[path]`) install it.

use std::alloc::{GlobalAlloc, Layout, System};

/// Far above what any replayed file needs, far below what a hostile size field asks for.
pub const MAX_ALLOCATION: usize = 256 << 20;

pub struct CappedAllocator;

// SAFETY: forwards to `System` unchanged, or returns null, which `GlobalAlloc` allows.
unsafe impl GlobalAlloc for CappedAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if layout.size() > MAX_ALLOCATION {
            return std::ptr::null_mut();
        }
        System.alloc(layout)
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if layout.size() > MAX_ALLOCATION {
            return std::ptr::null_mut();
        }
        System.alloc_zeroed(layout)
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if new_size > MAX_ALLOCATION {
            return std::ptr::null_mut();
        }
        System.realloc(ptr, layout, new_size)
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout)
    }
}

#[global_allocator]
static ALLOCATOR: CappedAllocator = CappedAllocator;
