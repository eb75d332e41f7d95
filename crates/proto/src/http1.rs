//! HTTP/1.1 responses as a load generator reads them, sans I/O and without copying: the head
//! ([`parse_head`]: status, keep-alive, how the body is framed) and, for chunked bodies, a
//! scanner that counts body bytes as they arrive ([`ChunkedScanner`]). Every length is
//! capped, and a buffer that can never become a response is `Invalid`, not `Incomplete`.

use crate::codec::DecodeError;

/// Largest response head (status line and headers) accepted.
pub const MAX_HEAD: usize = 64 * 1024;
/// Most headers in one response.
pub const MAX_HEADERS: usize = 100;
/// Longest chunk-size line accepted (size, extensions, CRLF).
const MAX_CHUNK_LINE: usize = 1024;

/// How the body after a head ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    /// No body (HEAD, 1xx, 204, 304).
    Empty,
    /// Exactly this many bytes.
    Length(u64),
    /// Chunked transfer coding.
    Chunked,
    /// Until the server closes the connection.
    UntilClose,
}

/// A parsed response head.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResponseHead {
    /// Status code.
    pub status: u16,
    /// Bytes of the head, up to and including the blank line.
    pub len: usize,
    /// How the body is framed.
    pub framing: Framing,
    /// True when the connection may carry another request afterwards.
    pub keep_alive: bool,
}

fn invalid(why: impl Into<String>) -> DecodeError {
    DecodeError::Invalid(why.into())
}

/// An interim (1xx) response that a final one follows; 101 (Switching Protocols) is final (the
/// connection then speaks another protocol), so it is counted as the answer, by its status.
pub fn is_interim(status: u16) -> bool {
    (100..200).contains(&status) && status != 101
}

/// Parses the head at the start of `buf`; `head_request` says the request was HEAD (whose
/// answer has no body whatever its headers say).
pub fn parse_head(buf: &[u8], head_request: bool) -> Result<ResponseHead, DecodeError> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut response = httparse::Response::new(&mut headers);
    let len = match response.parse(buf) {
        Ok(httparse::Status::Complete(len)) => len,
        Ok(httparse::Status::Partial) if buf.len() >= MAX_HEAD => {
            return Err(invalid(format!("response head larger than {MAX_HEAD} bytes")))
        }
        Ok(httparse::Status::Partial) => return Err(DecodeError::Incomplete(1)),
        Err(httparse::Error::TooManyHeaders) => {
            return Err(invalid(format!("more than {MAX_HEADERS} response headers")))
        }
        Err(e) => return Err(invalid(format!("not an HTTP/1.x response: {e}"))),
    };
    if len > MAX_HEAD {
        return Err(invalid(format!("response head larger than {MAX_HEAD} bytes")));
    }
    let status = response.code.ok_or_else(|| invalid("no status code"))?;
    let minor = response.version.unwrap_or(1);
    let mut length: Option<u64> = None;
    let mut chunked = false;
    let mut close = minor == 0;
    for h in response.headers.iter() {
        let value =
            std::str::from_utf8(h.value).map_err(|_| invalid("a header value is not text"))?;
        if h.name.eq_ignore_ascii_case("content-length") {
            let n: u64 = value
                .trim()
                .parse()
                .map_err(|_| invalid(format!("bad Content-Length '{value}'")))?;
            if length.is_some_and(|l| l != n) {
                return Err(invalid("conflicting Content-Length headers"));
            }
            length = Some(n);
        } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
            // Chunked must be the last coding; anything else we cannot frame.
            let last = value.rsplit(',').next().unwrap_or("").trim();
            if !last.eq_ignore_ascii_case("chunked") {
                return Err(invalid(format!("unsupported Transfer-Encoding '{value}'")));
            }
            chunked = true;
        } else if h.name.eq_ignore_ascii_case("connection") {
            for token in value.split(',').map(str::trim) {
                if token.eq_ignore_ascii_case("close") {
                    close = true;
                } else if token.eq_ignore_ascii_case("keep-alive") && minor == 0 {
                    close = false;
                }
            }
        }
    }
    let framing = if head_request || (100..200).contains(&status) || status == 204 || status == 304
    {
        Framing::Empty
    } else if chunked {
        // Transfer-Encoding wins over Content-Length (RFC 9112 §6.3).
        Framing::Chunked
    } else if let Some(n) = length {
        Framing::Length(n)
    } else {
        Framing::UntilClose
    };
    let keep_alive = !close && framing != Framing::UntilClose;
    Ok(ResponseHead { status, len, framing, keep_alive })
}

/// The value of header `name` in a complete head (for a redirect's `Location`); `None` when it
/// is absent, repeated or not text.
pub fn header<'a>(head: &'a [u8], name: &str) -> Option<&'a str> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut response = httparse::Response::new(&mut headers);
    response.parse(head).ok()?;
    let mut found = response.headers.iter().filter(|h| h.name.eq_ignore_ascii_case(name));
    let value = found.next()?.value;
    if found.next().is_some() {
        return None;
    }
    std::str::from_utf8(value).ok().map(str::trim)
}

/// Where a chunked body's scanner is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ChunkState {
    /// Reading a chunk-size line.
    Size,
    /// Inside chunk data, this many bytes left.
    Data(u64),
    /// After chunk data: the CRLF.
    DataEnd,
    /// After the last (zero) chunk: trailer lines until an empty one.
    Trailer,
    /// The body is complete.
    Done,
}

/// A chunk-size line that is not one, shown up to its line end.
fn bad_size(line: &[u8]) -> DecodeError {
    let shown = line.split(|&b| b == b'\n').next().unwrap_or_default();
    let shown = String::from_utf8_lossy(&shown[..shown.len().min(40)]);
    invalid(format!("bad chunk size '{}'", shown.trim()))
}

/// Counts a chunked body's data bytes as its bytes arrive, copying nothing. Size lines are
/// read by httparse (`parse_chunk_size`: hex digits, extensions, CRLF); a line split across
/// reads is carried, capped, to the next.
#[derive(Debug, Clone)]
pub struct ChunkedScanner {
    state: ChunkState,
    /// A partial line (size or trailer) carried between calls.
    line: Vec<u8>,
    /// Data bytes seen.
    pub body_bytes: u64,
}

impl Default for ChunkedScanner {
    fn default() -> Self {
        Self { state: ChunkState::Size, line: Vec::new(), body_bytes: 0 }
    }
}

impl ChunkedScanner {
    /// True once the terminating chunk and trailers have been read.
    pub fn done(&self) -> bool {
        self.state == ChunkState::Done
    }

    /// Consumes as much of `data` as belongs to the body; returns how many bytes that was
    /// (the rest, if any, belongs to the next response).
    pub fn feed(&mut self, data: &[u8]) -> Result<usize, DecodeError> {
        let mut at = 0;
        while at < data.len() && self.state != ChunkState::Done {
            match self.state {
                ChunkState::Data(left) => {
                    let n = left.min((data.len() - at) as u64);
                    self.body_bytes += n;
                    at += n as usize;
                    self.state =
                        if n == left { ChunkState::DataEnd } else { ChunkState::Data(left - n) };
                }
                // The CRLF after chunk data, whole in this read (as it nearly always is).
                ChunkState::DataEnd if self.line.is_empty() && data[at..].starts_with(b"\r\n") => {
                    at += 2;
                    self.state = ChunkState::Size;
                }
                // A size line that starts in this read is httparse's to read where it lies.
                ChunkState::Size if self.line.is_empty() => {
                    match httparse::parse_chunk_size(&data[at..]) {
                        Ok(httparse::Status::Complete((used, size))) => {
                            at += used;
                            self.state = Self::after_size(size);
                        }
                        Ok(httparse::Status::Partial) => {
                            self.take_line(&data[at..])?;
                            return Ok(data.len());
                        }
                        Err(_) => return Err(bad_size(&data[at..])),
                    }
                }
                ChunkState::Size | ChunkState::DataEnd | ChunkState::Trailer => {
                    let Some(end) = data[at..].iter().position(|&b| b == b'\n') else {
                        self.take_line(&data[at..])?;
                        return Ok(data.len());
                    };
                    let piece = &data[at..at + end + 1];
                    at += end + 1;
                    if self.line.is_empty() {
                        // The whole line is in this read: read it where it lies.
                        self.on_line(piece)?;
                    } else {
                        // The line began in an earlier read; its buffer is kept for the next.
                        self.take_line(piece)?;
                        let line = std::mem::take(&mut self.line);
                        let read = self.on_line(&line);
                        self.line = line;
                        self.line.clear();
                        read?;
                    }
                }
                ChunkState::Done => {}
            }
        }
        Ok(at)
    }

    /// Chunk data of `size` bytes, or the trailer after the last chunk (size 0).
    fn after_size(size: u64) -> ChunkState {
        if size == 0 {
            ChunkState::Trailer
        } else {
            ChunkState::Data(size)
        }
    }

    fn take_line(&mut self, part: &[u8]) -> Result<(), DecodeError> {
        if self.line.len() + part.len() > MAX_CHUNK_LINE {
            return Err(invalid("chunk-size or trailer line too long"));
        }
        self.line.extend_from_slice(part);
        Ok(())
    }

    fn on_line(&mut self, line: &[u8]) -> Result<(), DecodeError> {
        let text = line.strip_suffix(b"\n").unwrap_or(line);
        let text = text.strip_suffix(b"\r").unwrap_or(text);
        self.state = match self.state {
            ChunkState::Size => match httparse::parse_chunk_size(line) {
                Ok(httparse::Status::Complete((_, size))) => Self::after_size(size),
                _ => return Err(bad_size(line)),
            },
            ChunkState::DataEnd if text.is_empty() => ChunkState::Size,
            ChunkState::DataEnd => return Err(invalid("chunk data longer than its size")),
            ChunkState::Trailer if text.is_empty() => ChunkState::Done,
            ChunkState::Trailer => ChunkState::Trailer,
            other => other,
        };
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_header_by_name() {
        let head = b"HTTP/1.1 302 Found\r\nlocation:  /next \r\nX: 1\r\nX: 2\r\n\r\n";
        assert_eq!(header(head, "Location"), Some("/next"));
        assert_eq!(header(head, "X"), None, "repeated");
        assert_eq!(header(head, "Y"), None);
    }

    #[test]
    fn heads_and_their_framing() {
        let h = parse_head(b"HTTP/1.1 200 OK\r\nContent-Length: 615\r\n\r\nbody", false).unwrap();
        assert_eq!((h.status, h.framing, h.keep_alive), (200, Framing::Length(615), true));
        assert_eq!(h.len, 40);
        let h = parse_head(
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\nContent-Length: 3\r\n\r\n",
            false,
        )
        .unwrap();
        assert_eq!(h.framing, Framing::Chunked);
        let h = parse_head(
            b"HTTP/1.1 503 Busy\r\nConnection: close\r\nContent-Length: 0\r\n\r\n",
            false,
        )
        .unwrap();
        assert_eq!((h.status, h.keep_alive), (503, false));
        let h = parse_head(b"HTTP/1.0 200 OK\r\n\r\n", false).unwrap();
        assert_eq!((h.framing, h.keep_alive), (Framing::UntilClose, false));
        let h = parse_head(b"HTTP/1.1 204 No Content\r\nContent-Length: 9\r\n\r\n", false).unwrap();
        assert_eq!(h.framing, Framing::Empty);
        let h = parse_head(b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\n", true).unwrap();
        assert_eq!(h.framing, Framing::Empty);
    }

    #[test]
    fn partial_garbage_and_oversized_heads() {
        assert_eq!(
            parse_head(b"HTTP/1.1 200 OK\r\nContent-Le", false),
            Err(DecodeError::Incomplete(1))
        );
        assert!(matches!(
            parse_head(b"SSH-2.0-OpenSSH_9.2\r\n\r\n", false),
            Err(DecodeError::Invalid(_))
        ));
        let big = [b"HTTP/1.1 200 OK\r\nX: ".as_slice(), &vec![b'a'; MAX_HEAD]].concat();
        assert!(
            matches!(parse_head(&big, false), Err(DecodeError::Invalid(m)) if m.contains("larger"))
        );
        let conflict = b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n";
        assert!(
            matches!(parse_head(conflict, false), Err(DecodeError::Invalid(m)) if m.contains("conflicting"))
        );
        let coded = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n";
        assert!(parse_head(coded, false).is_err());
    }

    #[test]
    fn chunked_bodies_byte_by_byte_and_whole() {
        let body = b"5;ext=1\r\nhello\r\n6\r\n world\r\n0\r\nTrailer: x\r\n\r\nHTTP/1.1 next";
        let end = body.len() - b"HTTP/1.1 next".len();
        let mut whole = ChunkedScanner::default();
        assert_eq!(whole.feed(body).unwrap(), end);
        assert!(whole.done());
        assert_eq!(whole.body_bytes, 11);
        let mut bytewise = ChunkedScanner::default();
        let mut used = 0;
        for b in &body[..end] {
            used += bytewise.feed(std::slice::from_ref(b)).unwrap();
        }
        assert_eq!((used, bytewise.body_bytes, bytewise.done()), (end, 11, true));
        assert!(ChunkedScanner::default().feed(b"zz\r\n").is_err());
        assert!(ChunkedScanner::default().feed(b"2\r\nabc\r\n").is_err());
        assert!(ChunkedScanner::default().feed(&[b'1'; 2000]).is_err());
    }
}
