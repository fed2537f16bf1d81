//! QuickJS's memory, through Rust's allocator, held to the plugin's memory limit here
//! rather than inside QuickJS — so that the host knows when an allocation was refused.
//!
//! QuickJS out of memory while throwing cannot allocate the error and throws `null`
//! instead; by the time the call has unwound the memory is free again. Counting refusals
//! tells that `null` from a script's own `throw null`.
//!
//! `unsafe` is allowed here because rquickjs's `Allocator` is an unsafe trait; every block
//! is made, measured, resized and freed by rquickjs's own `RustAllocator`.
#![allow(unsafe_code)]

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use rquickjs::allocator::{Allocator, RustAllocator};

/// What every block costs beyond its usable size (the allocator's header, as QuickJS
/// counts its own overhead).
const OVERHEAD: usize = 16;

/// Rust's allocator with a limit on the bytes in use.
pub(crate) struct Limited {
    limit: usize,
    used: Usage,
    refusals: Arc<AtomicU64>,
}

/// The bytes the allocator holds for the runtime (what the limit counts), shared with the
/// engine: after running out, it decides from this whether the heap is still full.
#[derive(Clone, Default)]
pub(crate) struct Usage(Arc<AtomicUsize>);

impl Usage {
    pub(crate) fn get(&self) -> usize {
        self.0.load(Ordering::Relaxed)
    }
    fn set(&self, n: usize) {
        self.0.store(n, Ordering::Relaxed);
    }
}

impl Limited {
    /// An allocator refusing past `limit` bytes, the count of its refusals, and what it
    /// holds.
    pub(crate) fn new(limit: usize) -> (Self, Arc<AtomicU64>, Usage) {
        let refusals = Arc::new(AtomicU64::new(0));
        let used = Usage::default();
        let me = Self {
            limit,
            used: used.clone(),
            refusals: refusals.clone(),
        };
        (me, refusals, used)
    }

    /// Whether `more` bytes fit; counts a refusal when they do not.
    fn fits(&self, more: Option<usize>) -> bool {
        let fits = more
            .and_then(|more| self.used.get().checked_add(more))
            .is_some_and(|total| total <= self.limit);
        if !fits {
            self.refusals.fetch_add(1, Ordering::Relaxed);
        }
        fits
    }

    fn grew(&mut self, ptr: *mut u8) -> *mut u8 {
        if !ptr.is_null() {
            // SAFETY: `ptr` was just returned by `RustAllocator`.
            let size = unsafe { RustAllocator::usable_size(ptr) } + OVERHEAD;
            self.used.set(self.used.get() + size);
        }
        ptr
    }
}

// SAFETY: every block comes from `RustAllocator`, and is freed, resized and measured by it.
unsafe impl Allocator for Limited {
    fn alloc(&mut self, size: usize) -> *mut u8 {
        if !self.fits(size.checked_add(OVERHEAD)) {
            return std::ptr::null_mut();
        }
        let ptr = RustAllocator.alloc(size);
        self.grew(ptr)
    }

    fn calloc(&mut self, count: usize, size: usize) -> *mut u8 {
        let Some(total) = count.checked_mul(size) else {
            return std::ptr::null_mut();
        };
        if !self.fits(total.checked_add(OVERHEAD)) {
            return std::ptr::null_mut();
        }
        let ptr = RustAllocator.calloc(count, size);
        self.grew(ptr)
    }

    unsafe fn dealloc(&mut self, ptr: *mut u8) {
        // SAFETY: the caller passes a block of this allocator.
        let size = unsafe { RustAllocator::usable_size(ptr) } + OVERHEAD;
        self.used.set(self.used.get().saturating_sub(size));
        unsafe { RustAllocator.dealloc(ptr) };
    }

    unsafe fn realloc(&mut self, ptr: *mut u8, new_size: usize) -> *mut u8 {
        // SAFETY: the caller passes a block of this allocator.
        let old = unsafe { RustAllocator::usable_size(ptr) };
        if new_size > old && !self.fits(Some(new_size - old)) {
            return std::ptr::null_mut();
        }
        let new = unsafe { RustAllocator.realloc(ptr, new_size) };
        if !new.is_null() {
            let now = unsafe { RustAllocator::usable_size(new) };
            self.used.set(self.used.get().saturating_sub(old) + now);
        }
        new
    }

    unsafe fn usable_size(ptr: *mut u8) -> usize {
        // SAFETY: the caller passes a block of this allocator.
        unsafe { RustAllocator::usable_size(ptr) }
    }
}
