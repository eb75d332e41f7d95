//! One bulk transfer over loopback through a QUIC library (quinn, quiche) or plain TCP, for
//! scripts/bench/quic_stacks.sh: the client sends BYTES on one stream of one connection, the
//! server reads them to the end and answers one byte, and the client prints the goodput from
//! the stream's opening to that answer. Each side is its own process so that the script can
//! pin it to a core and count its CPU time.
//!
//!   quic-stacks server STACK ADDR DIR      (writes DIR/cert.der once it listens)
//!   quic-stacks client STACK ADDR DIR BYTES

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

type Result<T> = std::result::Result<T, Box<dyn std::error::Error>>;

/// The flow-control windows both QUIC libraries get: large enough that a loopback transfer
/// is limited by the library, not by a window.
const STREAM_WINDOW: u64 = 16 << 20;
const CONNECTION_WINDOW: u64 = 32 << 20;
/// The UDP payload both libraries send (quinn's upper bound for path MTU discovery).
const UDP_PAYLOAD: usize = 1452;
const CHUNK: usize = 64 << 10;

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage = "usage: quic-stacks server|client tcp|quinn|quiche ADDR DIR [BYTES]";
    let (role, stack, addr, dir) = match &args[..] {
        [r, s, a, d, ..] => (r.as_str(), s.as_str(), a.parse::<SocketAddr>()?, PathBuf::from(d)),
        _ => return Err(usage.into()),
    };
    let bytes: u64 = args.get(4).map(|b| b.parse()).transpose()?.unwrap_or(0);
    let runtime = || tokio::runtime::Builder::new_current_thread().enable_all().build();
    match (role, stack) {
        ("server", "tcp") => tcp_server(addr, &dir),
        ("client", "tcp") => report(bytes, tcp_client(addr, bytes)?),
        ("server", "quinn") => runtime()?.block_on(quinn_server(addr, &dir)),
        ("client", "quinn") => report(bytes, runtime()?.block_on(quinn_client(addr, &dir, bytes))?),
        ("server", "quiche") => quiche_side(addr, &dir, None).map(|_| ()),
        ("client", "quiche") => report(bytes, quiche_side(addr, &dir, Some(bytes))?),
        _ => Err(usage.into()),
    }
}

/// Prints the goodput: `bits_per_second seconds` on one line.
fn report(bytes: u64, elapsed: Duration) -> Result<()> {
    println!("{:.0} {:.3}", bytes as f64 * 8.0 / elapsed.as_secs_f64(), elapsed.as_secs_f64());
    Ok(())
}

/// A self-signed certificate for `localhost`, its DER written to DIR/cert.der (the client
/// trusts it) and its PEM files beside it (quiche loads files).
fn certificate(dir: &Path) -> Result<rcgen::CertifiedKey> {
    let key = rcgen::generate_simple_self_signed(vec!["localhost".to_string()])?;
    std::fs::write(dir.join("cert.pem"), key.cert.pem())?;
    std::fs::write(dir.join("key.pem"), key.key_pair.serialize_pem())?;
    Ok(key)
}

/// The signal that the server listens: written last.
fn ready(dir: &Path, key: &rcgen::CertifiedKey) -> Result<()> {
    std::fs::write(dir.join("cert.der.tmp"), key.cert.der())?;
    std::fs::rename(dir.join("cert.der.tmp"), dir.join("cert.der"))?;
    Ok(())
}

fn tcp_server(addr: SocketAddr, dir: &Path) -> Result<()> {
    use std::io::{Read, Write};
    let key = certificate(dir)?;
    let listener = std::net::TcpListener::bind(addr)?;
    ready(dir, &key)?;
    let (mut stream, _) = listener.accept()?;
    let mut buf = vec![0u8; CHUNK];
    while stream.read(&mut buf)? > 0 {}
    stream.write_all(b"!")?;
    Ok(())
}

fn tcp_client(addr: SocketAddr, bytes: u64) -> Result<Duration> {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(addr)?;
    let started = Instant::now();
    let buf = vec![0u8; CHUNK];
    let mut sent = 0u64;
    while sent < bytes {
        let n = (bytes - sent).min(CHUNK as u64) as usize;
        stream.write_all(&buf[..n])?;
        sent += n as u64;
    }
    stream.shutdown(std::net::Shutdown::Write)?;
    stream.read_exact(&mut [0u8; 1])?;
    Ok(started.elapsed())
}

fn quinn_transport() -> Arc<quinn::TransportConfig> {
    let mut t = quinn::TransportConfig::default();
    t.stream_receive_window(quinn::VarInt::from_u64(STREAM_WINDOW).unwrap());
    t.receive_window(quinn::VarInt::from_u64(CONNECTION_WINDOW).unwrap());
    t.send_window(CONNECTION_WINDOW);
    Arc::new(t)
}

async fn quinn_server(addr: SocketAddr, dir: &Path) -> Result<()> {
    let key = certificate(dir)?;
    let der = rustls::pki_types::PrivatePkcs8KeyDer::from(key.key_pair.serialize_der());
    let mut config =
        quinn::ServerConfig::with_single_cert(vec![key.cert.der().clone()], der.into())?;
    config.transport_config(quinn_transport());
    let endpoint = quinn::Endpoint::server(config, addr)?;
    ready(dir, &key)?;
    let connection = endpoint.accept().await.ok_or("endpoint closed")?.await?;
    let (mut send, mut recv) = connection.accept_bi().await?;
    while recv.read_chunk(usize::MAX, true).await?.is_some() {}
    send.write_all(b"!").await?;
    send.finish()?;
    connection.closed().await;
    Ok(())
}

async fn quinn_client(addr: SocketAddr, dir: &Path, bytes: u64) -> Result<Duration> {
    let mut roots = rustls::RootCertStore::empty();
    roots.add(std::fs::read(dir.join("cert.der"))?.into())?;
    let crypto =
        rustls::ClientConfig::builder().with_root_certificates(roots).with_no_client_auth();
    let mut config = quinn::ClientConfig::new(Arc::new(
        quinn::crypto::rustls::QuicClientConfig::try_from(crypto)?,
    ));
    config.transport_config(quinn_transport());
    let endpoint = quinn::Endpoint::client("127.0.0.1:0".parse()?)?;
    let connection = endpoint.connect_with(config, addr, "localhost")?.await?;
    let started = Instant::now();
    let (mut send, mut recv) = connection.open_bi().await?;
    let buf = vec![0u8; CHUNK];
    let mut sent = 0u64;
    while sent < bytes {
        let n = (bytes - sent).min(CHUNK as u64) as usize;
        send.write_all(&buf[..n]).await?;
        sent += n as u64;
    }
    send.finish()?;
    recv.read_exact(&mut [0u8; 1]).await?;
    let elapsed = started.elapsed();
    connection.close(0u32.into(), b"done");
    endpoint.wait_idle().await;
    Ok(elapsed)
}

fn quiche_config(dir: &Path, server: bool) -> Result<quiche::Config> {
    let mut c = quiche::Config::new(quiche::PROTOCOL_VERSION)?;
    c.set_application_protos(&[b"bench"])?;
    if server {
        c.load_cert_chain_from_pem_file(dir.join("cert.pem").to_str().unwrap())?;
        c.load_priv_key_from_pem_file(dir.join("key.pem").to_str().unwrap())?;
    } else {
        c.load_verify_locations_from_file(dir.join("cert.pem").to_str().unwrap())?;
        c.verify_peer(true);
    }
    c.set_max_idle_timeout(10_000);
    c.set_max_send_udp_payload_size(UDP_PAYLOAD);
    c.set_max_recv_udp_payload_size(UDP_PAYLOAD);
    c.set_initial_max_data(CONNECTION_WINDOW);
    c.set_initial_max_stream_data_bidi_local(STREAM_WINDOW);
    c.set_initial_max_stream_data_bidi_remote(STREAM_WINDOW);
    c.set_initial_max_streams_bidi(4);
    c.set_disable_active_migration(true);
    Ok(c)
}

/// quiche is sans-IO: this is the event loop its examples use (mio, one datagram a system
/// call, no GSO). `send` is `Some(BYTES)` on the client, which returns the transfer's time.
fn quiche_side(addr: SocketAddr, dir: &Path, send: Option<u64>) -> Result<Duration> {
    use mio::{Events, Interest, Poll, Token};
    let server = send.is_none();
    let key = if server { Some(certificate(dir)?) } else { None };
    let mut config = quiche_config(dir, server)?;
    let mut socket =
        mio::net::UdpSocket::bind(if server { addr } else { "127.0.0.1:0".parse()? })?;
    let local = socket.local_addr()?;
    let mut poll = Poll::new()?;
    poll.registry().register(&mut socket, Token(0), Interest::READABLE)?;
    let mut events = Events::with_capacity(64);
    let mut scid = [0u8; quiche::MAX_CONN_ID_LEN];
    ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut scid).unwrap();
    let scid = quiche::ConnectionId::from_ref(&scid);
    let (mut inbuf, mut out) = (vec![0u8; 65535], vec![0u8; UDP_PAYLOAD]);
    let mut conn = match (server, key) {
        (true, Some(key)) => {
            ready(dir, &key)?;
            loop {
                poll.poll(&mut events, None)?;
                if let Ok((len, from)) = socket.recv_from(&mut inbuf) {
                    let mut conn = quiche::accept(&scid, None, local, from, &mut config)?;
                    conn.recv(&mut inbuf[..len], quiche::RecvInfo { from, to: local })?;
                    break conn;
                }
            }
        }
        _ => quiche::connect(Some("localhost"), &scid, local, addr, &mut config)?,
    };
    let chunk = vec![0u8; CHUNK];
    let (mut sent, mut started, mut received, mut answered) = (0u64, None, 0u64, false);
    let mut finished = None;
    while !conn.is_closed() {
        // Send everything quiche has, then wait for a datagram or its timer.
        loop {
            match conn.send(&mut out) {
                // A full socket buffer loses the datagram, as the network would.
                Ok((n, info)) => drop(socket.send_to(&out[..n], info.to)),
                Err(quiche::Error::Done) => break,
                Err(e) => return Err(e.into()),
            }
        }
        poll.poll(&mut events, conn.timeout())?;
        if events.is_empty() {
            conn.on_timeout();
        }
        loop {
            match socket.recv_from(&mut inbuf) {
                Ok((len, from)) => {
                    let info = quiche::RecvInfo { from, to: local };
                    match conn.recv(&mut inbuf[..len], info) {
                        Ok(_) | Err(quiche::Error::Done) => {}
                        Err(e) => return Err(e.into()),
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                Err(e) => return Err(e.into()),
            }
        }
        if !conn.is_established() {
            continue;
        }
        for stream in conn.readable() {
            while let Ok((n, fin)) = conn.stream_recv(stream, &mut inbuf) {
                received += n as u64;
                if fin && server && !answered {
                    conn.stream_send(stream, b"!", true)?;
                    answered = true;
                } else if fin {
                    finished = started.map(|s: Instant| s.elapsed());
                    conn.close(true, 0, b"done")?;
                }
            }
        }
        if let Some(bytes) = send {
            started.get_or_insert_with(Instant::now);
            while sent < bytes {
                let n = (bytes - sent).min(CHUNK as u64) as usize;
                match conn.stream_send(0, &chunk[..n], sent + n as u64 == bytes) {
                    Ok(0) | Err(quiche::Error::Done) => break,
                    Ok(written) => sent += written as u64,
                    Err(e) => return Err(e.into()),
                }
            }
        }
    }
    match (server, finished) {
        (true, _) if received > 0 => Ok(Duration::ZERO),
        (false, Some(elapsed)) => Ok(elapsed),
        _ => Err(format!("the connection closed early: {:?}", conn.peer_error()).into()),
    }
}
