//! The allocator's hold on freed memory, for the processes that embed this crate.
//!
//! glibc's malloc keeps what a process frees for its next allocations, and after a large block
//! is freed it raises its mmap threshold (up to 32 MiB), so later blocks of that size come from
//! the heap, where they fragment it and stay counted in RSS once freed. A process that reads
//! big histories page by page, or a kernel whose conversations leave memory, would sit at its
//! peak. Every call is a no-op where the C library is not glibc.

/// Blocks of this size or more are mapped on their own, and unmapped when freed.
const MMAP_THRESHOLD: i32 = 256 * 1024;

/// Keeps the mmap threshold fixed (at 256 KiB), so large blocks go back to the system when
/// freed instead of staying in the heap. Call it once at start, before threads.
pub fn map_large_allocations() {
    #[cfg(target_env = "gnu")]
    // SAFETY: mallopt with a constant parameter and value; it only tunes the allocator.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD);
    }
}

/// Caps the allocator's arenas at `arenas` (glibc makes up to eight per core, one per thread
/// that allocates while another holds an arena, each keeping its own free pages): for a
/// process with little to allocate, such as a frontend, whose threads then share them. Call it
/// once at start, before threads.
pub fn limit_arenas(arenas: i32) {
    #[cfg(target_env = "gnu")]
    // SAFETY: mallopt with a constant parameter and a value; it only tunes the allocator.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, arenas);
    }
    #[cfg(not(target_env = "gnu"))]
    let _ = arenas;
}

/// Gives the heap's free memory at its top and in every arena back to the system
/// (`malloc_trim(0)`); says whether any was given. For after a large release, such as
/// conversations leaving memory: it walks every arena, so not for a hot path.
pub fn return_free_memory() -> bool {
    #[cfg(target_env = "gnu")]
    // SAFETY: malloc_trim takes no pointer and only releases free pages.
    unsafe {
        libc::malloc_trim(0) != 0
    }
    #[cfg(not(target_env = "gnu"))]
    false
}
