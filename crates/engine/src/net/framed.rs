//! Control frames over an async TCP stream: the I/O half of `wirespeed_proto::codec`.
//! Reads are cancel-safe (bytes read stay in the buffer), so `recv` can sit in a `select!`.

use std::io;
use std::time::Duration;

use serde::{de::DeserializeOwned, Serialize};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use wirespeed_proto::codec::{decode_frame, encode_frame, DecodeError, MAX_FRAME_LEN};

/// Why a control frame could not be read or written.
#[derive(Debug, thiserror::Error)]
pub(crate) enum FrameError {
    /// The peer closed the connection.
    #[error("the peer closed the control connection")]
    Closed,
    /// Nothing arrived in time.
    #[error("no control message within {0:?}")]
    Timeout(Duration),
    /// The bytes were not a valid frame.
    #[error("malformed control message: {0}")]
    Invalid(String),
    /// The socket failed.
    #[error("control connection: {0}")]
    Io(#[from] io::Error),
}

/// A control connection with its read buffer.
#[derive(Debug)]
pub(crate) struct Framed {
    stream: TcpStream,
    buf: Vec<u8>,
}

impl Framed {
    /// Wraps a connected stream; `leftover` holds bytes already read past the preamble.
    pub(crate) fn new(stream: TcpStream, leftover: Vec<u8>) -> Self {
        let _ = stream.set_nodelay(true);
        Self { stream, buf: leftover }
    }

    /// Sends one message.
    pub(crate) async fn send<T: Serialize>(&mut self, msg: &T) -> Result<(), FrameError> {
        let mut out = Vec::with_capacity(256);
        encode_frame(msg, &mut out).map_err(|e| FrameError::Invalid(e.to_string()))?;
        self.stream.write_all(&out).await?;
        Ok(())
    }

    /// Writes raw bytes (a preamble).
    pub(crate) async fn send_raw(&mut self, bytes: &[u8]) -> Result<(), FrameError> {
        self.stream.write_all(bytes).await?;
        Ok(())
    }

    /// Receives one message. Cancel-safe.
    pub(crate) async fn recv<T: DeserializeOwned>(&mut self) -> Result<T, FrameError> {
        loop {
            match decode_frame::<T>(&self.buf) {
                Ok((msg, used)) => {
                    self.buf.drain(..used);
                    return Ok(msg);
                }
                Err(DecodeError::Invalid(why)) => return Err(FrameError::Invalid(why)),
                Err(DecodeError::Incomplete(_)) => {}
            }
            if self.buf.len() > MAX_FRAME_LEN as usize + 4 {
                return Err(FrameError::Invalid("frame larger than the cap".into()));
            }
            self.buf.reserve(4096);
            if self.stream.read_buf(&mut self.buf).await? == 0 {
                return Err(FrameError::Closed);
            }
        }
    }

    /// Receives one message, failing after `limit`.
    pub(crate) async fn recv_within<T: DeserializeOwned>(
        &mut self,
        limit: Duration,
    ) -> Result<T, FrameError> {
        tokio::time::timeout(limit, self.recv()).await.map_err(|_| FrameError::Timeout(limit))?
    }

    /// Half-closes and drops the connection.
    pub(crate) async fn close(mut self) {
        let _ = self.stream.shutdown().await;
    }
}
