//! How DNS messages travel over QUIC and HTTPS, sans I/O: a DoQ stream carries one message
//! after a two-byte length (RFC 9250 §4.2), and a DoH GET carries it base64url-encoded, without
//! padding, in the `dns` parameter of the query string (RFC 8484 §4.1). Both sides of
//! wirespeed read them here, so the fuzzers reach them.

use base64::Engine as _;

/// A DoQ stream's whole contents as its one message: the length prefix must match exactly.
pub fn doq_message(stream: &[u8]) -> Option<&[u8]> {
    let (len, rest) = stream.split_first_chunk::<2>()?;
    (usize::from(u16::from_be_bytes(*len)) == rest.len()).then_some(rest)
}

/// `msg` as a DoQ stream: its length, then itself. `None` when it is too long for the prefix.
pub fn doq_frame(msg: &[u8]) -> Option<Vec<u8>> {
    let len = u16::try_from(msg.len()).ok()?;
    let mut frame = Vec::with_capacity(2 + msg.len());
    frame.extend_from_slice(&len.to_be_bytes());
    frame.extend_from_slice(msg);
    Some(frame)
}

/// The message a DoH GET carries in `query` (the URI's query string, without `?`), or why
/// there is none. Padding is tolerated, as RFC 8484 asks clients to leave it out.
pub fn doh_get_message(query: &str) -> Result<Vec<u8>, &'static str> {
    let param = query.split('&').find_map(|p| p.strip_prefix("dns=")).ok_or("no dns= parameter")?;
    base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(param.trim_end_matches('='))
        .map_err(|_| "dns= is not base64url")
}

/// `msg` as a DoH GET's query string value (base64url, no padding).
pub fn doh_get_param(msg: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(msg)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_doq_stream_is_one_length_prefixed_message() {
        let frame = doq_frame(b"abc").unwrap();
        assert_eq!(frame, b"\x00\x03abc");
        assert_eq!(doq_message(&frame), Some(&b"abc"[..]));
        assert_eq!(doq_message(b"\x00\x04abc"), None, "short");
        assert_eq!(doq_message(b"\x00\x02abc"), None, "two messages or trailing bytes");
        assert_eq!(doq_message(b"\x00"), None);
        assert!(doq_frame(&vec![0; 70_000]).is_none());
    }

    #[test]
    fn a_doh_get_carries_the_message_in_base64url() {
        let msg = [0u8, 0, 1, 0xff, 0xfe];
        let param = doh_get_param(&msg);
        assert!(!param.contains(['=', '+', '/']), "{param}");
        assert_eq!(doh_get_message(&format!("ct=x&dns={param}")), Ok(msg.to_vec()));
        assert_eq!(doh_get_message(&format!("dns={param}==")), Ok(msg.to_vec()), "padding");
        assert_eq!(doh_get_message("x=1"), Err("no dns= parameter"));
        assert_eq!(doh_get_message("dns=%%%"), Err("dns= is not base64url"));
    }
}
