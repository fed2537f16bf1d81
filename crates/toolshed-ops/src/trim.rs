//! Giving freed memory back to the system after a large request.
//!
//! glibc keeps what a thread freed in that thread's arena: after a request that parsed a
//! large document on one worker thread and another on the next, each arena stays as large
//! as its largest request, and the resident size adds them up although nothing uses the
//! memory. `malloc_trim` returns the free pages of every arena.

/// Returns free heap pages to the system (glibc's `malloc_trim`); does nothing elsewhere.
/// Costs a walk over the heap: call it after work that freed a lot, not after every call.
pub fn give_back_free_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    #[allow(unsafe_code)]
    // SAFETY: malloc_trim takes a plain integer and only reorganises the allocator's own
    // free lists; it is safe to call from any thread at any time.
    unsafe {
        libc::malloc_trim(0);
    }
}
