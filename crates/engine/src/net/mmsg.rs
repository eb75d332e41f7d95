//! Preallocated `sendmmsg`/`recvmmsg` batches: the buffers, iovecs and message headers are
//! built once and point at each other for the batch's whole life, so a DNS worker or the DNS
//! fixture moves dozens of datagrams per system call without allocating (the `sys`
//! helpers build their headers per call). With `named`, each message carries a peer address:
//! an unconnected server socket learns whom to answer; [`MsgBatch::stamped`] keeps room for
//! the kernel's receive timestamp of each message (`SO_TIMESTAMPNS`).

use std::io;
use std::mem::size_of;
use std::os::fd::RawFd;

/// A batch of `count` datagram buffers of `size` bytes each.
pub(crate) struct MsgBatch {
    bufs: Box<[u8]>,
    size: usize,
    iovs: Box<[libc::iovec]>,
    names: Box<[libc::sockaddr_storage]>,
    msgs: Box<[libc::mmsghdr]>,
    named: bool,
    controls: Option<Box<[[u64; 8]]>>,
}

// SAFETY: the raw pointers inside point into the batch's own boxed buffers, which move with
// it and are only used through `&mut self`.
unsafe impl Send for MsgBatch {}

impl MsgBatch {
    /// A batch of `count` buffers of `size` bytes; `named` keeps a peer address per message.
    pub(crate) fn new(count: usize, size: usize, named: bool) -> Self {
        let mut bufs = vec![0u8; count * size].into_boxed_slice();
        let mut iovs: Box<[libc::iovec]> = (0..count)
            .map(|i| libc::iovec {
                // SAFETY: i * size is within the buffer of count * size bytes.
                iov_base: unsafe { bufs.as_mut_ptr().add(i * size) }.cast(),
                iov_len: size,
            })
            .collect();
        // SAFETY: sockaddr_storage and mmsghdr are plain data; zeroed is valid for both.
        let mut names: Box<[libc::sockaddr_storage]> =
            (0..count).map(|_| unsafe { std::mem::zeroed() }).collect();
        let mut msgs: Box<[libc::mmsghdr]> =
            (0..count).map(|_| unsafe { std::mem::zeroed() }).collect();
        for i in 0..count {
            let h = &mut msgs[i].msg_hdr;
            h.msg_iov = &mut iovs[i];
            h.msg_iovlen = 1;
            if named {
                h.msg_name = (&mut names[i] as *mut libc::sockaddr_storage).cast();
                h.msg_namelen = size_of::<libc::sockaddr_storage>() as libc::socklen_t;
            }
        }
        Self { bufs, size, iovs, names, msgs, named, controls: None }
    }

    /// Keeps room for each received message's kernel timestamp (the socket must have
    /// `SO_TIMESTAMPNS` on); read it with [`Self::stamp_ns`].
    pub(crate) fn stamped(mut self) -> Self {
        let mut controls: Box<[[u64; 8]]> = vec![[0u64; 8]; self.msgs.len()].into_boxed_slice();
        for (m, c) in self.msgs.iter_mut().zip(controls.iter_mut()) {
            m.msg_hdr.msg_control = c.as_mut_ptr().cast();
        }
        self.controls = Some(controls);
        self
    }

    /// When the kernel received message `i` of the last [`Self::recv`] (wall clock, ns since
    /// the epoch), if the batch is [`Self::stamped`] and the kernel stamped it.
    pub(crate) fn stamp_ns(&self, i: usize) -> Option<i64> {
        self.controls.as_ref()?;
        let hdr = &self.msgs[i].msg_hdr;
        // SAFETY: walking the control buffer the kernel filled, bounded by msg_controllen.
        unsafe {
            let mut cmsg = libc::CMSG_FIRSTHDR(hdr);
            while !cmsg.is_null() {
                let c = &*cmsg;
                if c.cmsg_level == libc::SOL_SOCKET && c.cmsg_type == libc::SCM_TIMESTAMPNS {
                    let ts: libc::timespec = std::ptr::read_unaligned(libc::CMSG_DATA(cmsg).cast());
                    return Some(ts.tv_sec * 1_000_000_000 + ts.tv_nsec);
                }
                cmsg = libc::CMSG_NXTHDR(hdr, cmsg);
            }
        }
        None
    }

    /// How many messages the batch holds.
    pub(crate) fn capacity(&self) -> usize {
        self.msgs.len()
    }

    /// Buffer `i`, whole, to fill before [`Self::send`].
    pub(crate) fn buf_mut(&mut self, i: usize) -> &mut [u8] {
        &mut self.bufs[i * self.size..(i + 1) * self.size]
    }

    /// What message `i` of the last [`Self::recv`] holds.
    pub(crate) fn received(&self, i: usize) -> &[u8] {
        let len = (self.msgs[i].msg_len as usize).min(self.size);
        &self.bufs[i * self.size..i * self.size + len]
    }

    /// Sends messages `0..lens.len()`, message `i` being the first `lens[i]` bytes of its
    /// buffer, to the connected peer (or, in a named batch, to each message's address).
    /// Returns how many the kernel took.
    pub(crate) fn send(&mut self, fd: RawFd, lens: &[usize]) -> io::Result<usize> {
        self.send_from(fd, 0, lens)
    }

    /// Like [`Self::send`] for messages `first..lens.len()`: the rest of a batch the kernel
    /// took only part of.
    pub(crate) fn send_from(
        &mut self,
        fd: RawFd,
        first: usize,
        lens: &[usize],
    ) -> io::Result<usize> {
        let n = lens.len().min(self.msgs.len());
        if first >= n {
            return Ok(0);
        }
        for (i, &len) in lens.iter().enumerate().take(n) {
            self.iovs[i].iov_len = len.min(self.size);
        }
        // SAFETY: headers first..n point at live iovecs, buffers and names of this batch.
        let r = unsafe {
            libc::sendmmsg(
                fd,
                self.msgs.as_mut_ptr().add(first),
                (n - first) as libc::c_uint,
                libc::MSG_DONTWAIT,
            )
        };
        if r < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(r as usize)
        }
    }

    /// Receives up to a batch of datagrams without waiting; returns how many arrived (an
    /// empty socket is `Ok(0)`).
    pub(crate) fn recv(&mut self, fd: RawFd) -> io::Result<usize> {
        for i in 0..self.msgs.len() {
            self.iovs[i].iov_len = self.size;
            if self.controls.is_some() {
                self.msgs[i].msg_hdr.msg_controllen = size_of::<[u64; 8]>();
            }
            if self.named {
                self.msgs[i].msg_hdr.msg_namelen =
                    size_of::<libc::sockaddr_storage>() as libc::socklen_t;
            }
        }
        // SAFETY: every header points at live iovecs, buffers and names of this batch.
        let r = unsafe {
            libc::recvmmsg(
                fd,
                self.msgs.as_mut_ptr(),
                self.msgs.len() as libc::c_uint,
                libc::MSG_DONTWAIT,
                std::ptr::null_mut(),
            )
        };
        if r < 0 {
            let e = io::Error::last_os_error();
            return if e.kind() == io::ErrorKind::WouldBlock { Ok(0) } else { Err(e) };
        }
        Ok(r as usize)
    }

    /// True when messages `a` and `b` go to the same address (a named batch).
    pub(crate) fn same_peer(&self, a: usize, b: usize) -> bool {
        let (na, nb) = (self.msgs[a].msg_hdr.msg_namelen, self.msgs[b].msg_hdr.msg_namelen);
        let bytes = |i: usize, n: libc::socklen_t| {
            // SAFETY: a sockaddr_storage is plain bytes, and n is at most its size.
            unsafe {
                std::slice::from_raw_parts(
                    (&self.names[i] as *const libc::sockaddr_storage).cast::<u8>(),
                    (n as usize).min(size_of::<libc::sockaddr_storage>()),
                )
            }
        };
        na == nb && bytes(a, na) == bytes(b, nb)
    }

    /// Sends messages `first..first + count`, all `segment` bytes long and to message
    /// `first`'s address, as one UDP GSO send packed in `pack`.
    pub(crate) fn send_gso_run(
        &mut self,
        fd: RawFd,
        first: usize,
        count: usize,
        segment: usize,
        pack: &mut Vec<u8>,
    ) -> io::Result<usize> {
        pack.clear();
        for i in first..first + count {
            pack.extend_from_slice(&self.bufs[i * self.size..i * self.size + segment]);
        }
        let mut iov = libc::iovec { iov_base: pack.as_mut_ptr().cast(), iov_len: pack.len() };
        let mut control = [0u64; 4];
        // SAFETY: msghdr is plain data; zeroed is a valid empty header.
        let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        if self.named {
            msg.msg_name = (&mut self.names[first] as *mut libc::sockaddr_storage).cast();
            msg.msg_namelen = self.msgs[first].msg_hdr.msg_namelen;
        }
        // SAFETY: CMSG_SPACE is a pure size computation.
        msg.msg_controllen = unsafe { libc::CMSG_SPACE(size_of::<u16>() as u32) } as usize;
        msg.msg_control = control.as_mut_ptr().cast();
        // SAFETY: the control buffer (32 bytes) holds the one header CMSG_SPACE(2) asks for.
        unsafe {
            let cmsg = libc::CMSG_FIRSTHDR(&msg);
            (*cmsg).cmsg_level = libc::SOL_UDP;
            (*cmsg).cmsg_type = libc::UDP_SEGMENT;
            (*cmsg).cmsg_len = libc::CMSG_LEN(size_of::<u16>() as u32) as usize;
            std::ptr::write_unaligned(libc::CMSG_DATA(cmsg).cast::<u16>(), segment as u16);
        }
        // SAFETY: msg points at iov, the name and control, all alive for the call.
        let r = unsafe { libc::sendmsg(fd, &msg, libc::MSG_DONTWAIT) };
        if r < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(count)
        }
    }

    /// Copies the peer address of message `from` of `other` (a received batch) into message
    /// `to` of this one, so an answer goes back where its query came from.
    pub(crate) fn reply_to(&mut self, to: usize, other: &MsgBatch, from: usize) {
        self.names[to] = other.names[from];
        self.msgs[to].msg_hdr.msg_namelen = other.msgs[from].msg_hdr.msg_namelen;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::UdpSocket;
    use std::os::fd::AsRawFd;

    #[test]
    fn a_batch_goes_out_and_comes_back_with_addresses() {
        let server = UdpSocket::bind("127.0.0.1:0").unwrap();
        let client = UdpSocket::bind("127.0.0.1:0").unwrap();
        client.connect(server.local_addr().unwrap()).unwrap();
        let mut out = MsgBatch::new(4, 64, false);
        for i in 0..3 {
            out.buf_mut(i)[..2].copy_from_slice(&[i as u8, 0xaa]);
        }
        assert_eq!(out.send(client.as_raw_fd(), &[2, 2, 1]).unwrap(), 3);
        std::thread::sleep(std::time::Duration::from_millis(20));
        let mut got = MsgBatch::new(8, 64, true);
        assert_eq!(got.recv(server.as_raw_fd()).unwrap(), 3);
        assert_eq!(got.received(2), &[2]);
        let mut back = MsgBatch::new(8, 64, true);
        back.buf_mut(0)[0] = 9;
        back.reply_to(0, &got, 1);
        assert_eq!(back.send(server.as_raw_fd(), &[1]).unwrap(), 1);
        let mut buf = [0u8; 8];
        assert_eq!(client.recv(&mut buf).unwrap(), 1);
        assert_eq!(buf[0], 9);
        assert_eq!(got.recv(server.as_raw_fd()).unwrap(), 0, "empty socket");
    }
}
