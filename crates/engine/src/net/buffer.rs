//! Page-aligned byte buffers for the data path.
//!
//! Why not `vec![0u8; n]`: glibc serves allocations of 128 KiB and more with `mmap`, 16 bytes past
//! a page boundary. The kernel copies socket data to and from page-aligned skb pages, so such a
//! buffer sits 16 bytes off every source page and the copy stalls on 4 KiB address aliasing. On
//! loopback that cut a TCP receiver to a third of its speed for the first test of each server
//! process (later tests happened to get heap memory at other offsets). Aligning to the page
//! removes the accident.

use std::alloc::{alloc_zeroed, dealloc, handle_alloc_error, Layout};
use std::ops::{Deref, DerefMut};
use std::ptr::NonNull;

const PAGE: usize = 4096;

/// A zeroed heap buffer whose first byte is on a page boundary.
pub(crate) struct PageBuf {
    ptr: NonNull<u8>,
    len: usize,
    layout: Layout,
}

// SAFETY: PageBuf owns its allocation exclusively, like a Vec<u8>.
unsafe impl Send for PageBuf {}

impl PageBuf {
    /// A zeroed buffer of `len` bytes.
    pub(crate) fn zeroed(len: usize) -> Self {
        // At least one byte is allocated: zero-sized allocations are not allowed.
        let layout = Layout::from_size_align(len.max(1), PAGE).expect("buffer size overflows");
        // SAFETY: the layout has a non-zero size.
        let raw = unsafe { alloc_zeroed(layout) };
        let Some(ptr) = NonNull::new(raw) else { handle_alloc_error(layout) };
        Self { ptr, len, layout }
    }
}

impl Deref for PageBuf {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        // SAFETY: ptr points at `layout.size() >= len` initialised (zeroed) bytes we own.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl DerefMut for PageBuf {
    fn deref_mut(&mut self) -> &mut [u8] {
        // SAFETY: as in deref, and `&mut self` makes the access exclusive.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl Drop for PageBuf {
    fn drop(&mut self) {
        // SAFETY: allocated in `zeroed` with exactly this layout.
        unsafe { dealloc(self.ptr.as_ptr(), self.layout) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn is_page_aligned_zeroed_and_writable() {
        for len in [0, 1, 1400, 128 * 1024, 256 * 1024 + 3] {
            let mut b = PageBuf::zeroed(len);
            assert_eq!(b.len(), len);
            assert_eq!(b.as_ptr() as usize % PAGE, 0);
            assert!(b.iter().all(|&x| x == 0));
            if len > 0 {
                b[len - 1] = 7;
                assert_eq!(b[len - 1], 7);
            }
        }
    }
}
