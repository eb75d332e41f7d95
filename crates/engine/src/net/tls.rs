//! TLS settings: the client's of `wirespeed http`, `dns` and `rpm` (which certificates to
//! trust — the system's store, a `--cacert` file, or none with `--insecure` — a client
//! certificate (`--cert` and `--key`), and the ALPN protocols to offer), and a server's
//! (`web --tls-cert`: a certificate chain and key, HTTP/2 and HTTP/1.1 by ALPN); and a
//! certificate made at start and trusted by its fingerprint alone, for a test's own QUIC data
//! connections.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};

/// Where the TLS settings come from.
#[derive(Debug, Clone, Default)]
pub struct TlsOptions {
    /// Trust only the certificates in this PEM file instead of the system's store.
    pub cacert: Option<PathBuf>,
    /// Client certificate chain (PEM), sent when the server asks.
    pub cert: Option<PathBuf>,
    /// The client certificate's private key (PEM).
    pub key: Option<PathBuf>,
    /// Accept any server certificate.
    pub insecure: bool,
    /// Name sent in SNI and checked against the certificate, instead of the URL's host.
    pub server_name: Option<String>,
}

fn bad(context: String, e: impl std::fmt::Display) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, format!("{context}: {e}"))
}

fn certificates(path: &Path) -> io::Result<Vec<CertificateDer<'static>>> {
    let what = || format!("{}", path.display());
    let certs = CertificateDer::pem_file_iter(path)
        .map_err(|e| bad(what(), e))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| bad(what(), e))?;
    if certs.is_empty() {
        return Err(bad(what(), "no PEM certificate in the file"));
    }
    Ok(certs)
}

/// The client configuration for these options, offering `alpn` (e.g. `h2`, `http/1.1`).
pub fn client_config(opts: &TlsOptions, alpn: &[&[u8]]) -> io::Result<Arc<ClientConfig>> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| bad("TLS".into(), e))?;
    let builder = if opts.insecure {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(Verifier { provider, pin: None }))
    } else {
        let mut roots = RootCertStore::empty();
        match &opts.cacert {
            Some(path) => {
                for cert in certificates(path)? {
                    roots.add(cert).map_err(|e| bad(format!("--cacert {}", path.display()), e))?;
                }
            }
            None => {
                let found = rustls_native_certs::load_native_certs();
                roots.add_parsable_certificates(found.certs);
            }
        }
        builder.with_root_certificates(roots)
    };
    let mut config = match (&opts.cert, &opts.key) {
        (Some(cert), Some(key)) => {
            let chain = certificates(cert)?;
            let key = PrivateKeyDer::from_pem_file(key)
                .map_err(|e| bad(format!("--key {}", key.display()), e))?;
            builder.with_client_auth_cert(chain, key).map_err(|e| bad("--cert/--key".into(), e))?
        }
        (None, None) => builder.with_no_client_auth(),
        _ => return Err(bad("--cert and --key".into(), "give both or neither")),
    };
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    Ok(Arc::new(config))
}

/// A server's TLS settings from a PEM certificate chain and its PEM private key, offering
/// HTTP/2 then HTTP/1.1 by ALPN.
pub fn server_config(cert: &Path, key: &Path) -> io::Result<Arc<rustls::ServerConfig>> {
    server_config_for(cert, key, &[b"h2", b"http/1.1"])
}

/// A server's TLS settings as [`server_config`]'s, offering `alpn` (QUIC's protocols, say).
pub fn server_config_for(
    cert: &Path,
    key: &Path,
    alpn: &[&[u8]],
) -> io::Result<Arc<rustls::ServerConfig>> {
    let chain = certificates(cert)?;
    let key = PrivateKeyDer::from_pem_file(key)
        .map_err(|e| bad(format!("--tls-key {}", key.display()), e))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| bad("TLS".into(), e))?
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .map_err(|e| bad("--tls-cert/--tls-key".into(), e))?;
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    Ok(Arc::new(config))
}

/// A certificate made for this process alone: the TLS settings that present it (offering
/// `alpn`) and its SHA-256, which clients learn over an authenticated channel and pin.
pub fn self_signed(alpn: &[&[u8]]) -> io::Result<(Arc<rustls::ServerConfig>, [u8; 32])> {
    let made = rcgen::generate_simple_self_signed(vec!["wirespeed".to_string()])
        .map_err(|e| bad("making a certificate".into(), e))?;
    let der = made.cert.der().clone();
    let key = PrivateKeyDer::try_from(made.key_pair.serialize_der())
        .map_err(|e| bad("the certificate's key".into(), e))?;
    let pin = fingerprint(&der);
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(|e| bad("TLS".into(), e))?
        .with_no_client_auth()
        .with_single_cert(vec![der], key)
        .map_err(|e| bad("the certificate".into(), e))?;
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    Ok((Arc::new(config), pin))
}

/// A certificate's SHA-256.
pub fn fingerprint(cert: &CertificateDer<'_>) -> [u8; 32] {
    use sha2::Digest;
    sha2::Sha256::digest(cert.as_ref()).into()
}

/// Client settings that trust exactly the certificate whose SHA-256 is `pin` (whatever name
/// it carries), offering `alpn`.
pub fn pinned_client_config(pin: [u8; 32], alpn: &[&[u8]]) -> io::Result<Arc<ClientConfig>> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let verifier = Arc::new(Verifier { provider: provider.clone(), pin: Some(pin) });
    let mut config = ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(|e| bad("TLS".into(), e))?
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth();
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    Ok(Arc::new(config))
}

/// The name to send in SNI and to verify: `--sni` when given, else the URL's host.
pub fn server_name(opts: &TlsOptions, host: &str) -> io::Result<ServerName<'static>> {
    let name = opts.server_name.as_deref().unwrap_or(host);
    ServerName::try_from(name.to_string()).map_err(|e| bad(format!("server name '{name}'"), e))
}

/// Checks handshake signatures (so the handshake is still real TLS) and, with `pin`, that the
/// server presented exactly that certificate; without one (`--insecure`), not who signed.
#[derive(Debug)]
struct Verifier {
    provider: Arc<rustls::crypto::CryptoProvider>,
    pin: Option<[u8; 32]>,
}

impl ServerCertVerifier for Verifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match self.pin {
            Some(pin) if fingerprint(end_entity) != pin => Err(rustls::Error::InvalidCertificate(
                rustls::CertificateError::Other(rustls::OtherError(Arc::new(NotPinned))),
            )),
            _ => Ok(ServerCertVerified::assertion()),
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider.signature_verification_algorithms.supported_schemes()
    }
}

/// A pinned certificate that was not the one presented.
struct NotPinned;

impl std::fmt::Display for NotPinned {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the certificate is not the one the server announced on its control connection")
    }
}

/// rustls words a certificate error with its `Debug`: this one's is its sentence.
impl std::fmt::Debug for NotPinned {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(self, f)
    }
}

impl std::error::Error for NotPinned {}
