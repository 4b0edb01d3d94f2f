//! Memory freed while a session was built, handed back to the system.
//!
//! Building a session makes transient copies of its weights (aligned copies for the kernels'
//! factories, transposed forms a packer reads once, the capability pass's trial kernels) and
//! frees them. The C allocators keep freed memory for reuse: glibc's malloc keeps it in its
//! arenas once its dynamic mmap threshold has grown past the weights' sizes, and TBB's scalable
//! allocator (loaded by OpenVINO) keeps freed blocks in per-thread caches. Without a hint
//! that memory stays resident for the life of the process although no session holds it, so a
//! session would look (and be, to the system) twice its size. [`release_free_memory`] asks
//! both allocators to give it back; it is called once at the end of each session build, where
//! it costs well under a millisecond against the build's compile time.
//!
//! Nothing a session holds is touched: only free memory is returned.

/// Returns the memory the process's allocators hold free to the system: glibc's
/// `malloc_trim(0)`, and TBB's `scalable_allocation_command(TBBMALLOC_CLEAN_ALL_BUFFERS)` when
/// TBB's allocator is loaded. Does nothing on other platforms.
pub fn release_free_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: malloc_trim only releases free heap memory; it has no preconditions.
        unsafe { libc::malloc_trim(0) };
        // SAFETY: a symbol lookup in the already loaded libraries, with a NUL-terminated name.
        let clean = unsafe { libc::dlsym(libc::RTLD_DEFAULT, c"scalable_allocation_command".as_ptr()) };
        if !clean.is_null() {
            // TBB's `int scalable_allocation_command(int cmd, void* param)`; command 0 is
            // TBBMALLOC_CLEAN_ALL_BUFFERS.
            type Command = unsafe extern "C" fn(libc::c_int, *mut libc::c_void) -> libc::c_int;
            // SAFETY: the symbol is TBB's function of that signature.
            let clean: Command = unsafe { std::mem::transmute::<*mut libc::c_void, Command>(clean) };
            // SAFETY: CLEAN_ALL_BUFFERS takes a null parameter.
            unsafe { clean(0, std::ptr::null_mut()) };
        }
    }
}
