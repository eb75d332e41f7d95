//! TLS to PostgreSQL, with libpq's meaning of `sslmode` (which users' URLs are written for):
//! `disable` is plain; `prefer` (the default) and `require` encrypt without checking who
//! answers; `verify-ca` checks the certificate's chain against `sslrootcert` (or the system's
//! roots), and `verify-full` also its name. The `postgres` crate's URL parser knows neither the
//! `verify-*` modes nor `sslrootcert`, so [`Tls::take_from`] takes them out of the URL first.

use std::path::PathBuf;
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{
    CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme,
};

/// What a URL asks of TLS.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Tls {
    /// `sslmode=disable`.
    Off,
    /// `prefer` or `require`: encrypted, whoever answers (libpq's meaning).
    Encrypt,
    /// `verify-ca` (`name: false`) or `verify-full`: the chain checked against `roots` (the
    /// system's when `None`), and with `name` the host name too.
    Verify {
        /// Check the host name as well as the chain.
        name: bool,
        /// `sslrootcert`: the certificates to trust.
        roots: Option<PathBuf>,
    },
}

impl Tls {
    /// Reads `sslmode` and `sslrootcert` from `url`; returns the URL as the `postgres` crate
    /// can parse it (a `verify-*` mode becomes `require`, `sslrootcert` goes).
    pub(crate) fn take_from(url: &str) -> Result<(Self, String), String> {
        let mut parsed = url::Url::parse(url).map_err(|e| e.to_string())?;
        let pairs: Vec<(String, String)> =
            parsed.query_pairs().map(|(k, v)| (k.into_owned(), v.into_owned())).collect();
        let get = |key: &str| pairs.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str());
        let roots = get("sslrootcert").map(PathBuf::from);
        let tls = match get("sslmode") {
            Some("disable") => Tls::Off,
            None | Some("prefer" | "require" | "allow") => Tls::Encrypt,
            Some("verify-ca") => Tls::Verify { name: false, roots },
            Some("verify-full") => Tls::Verify { name: true, roots },
            Some(other) => {
                return Err(format!(
                    "sslmode={other}: use disable, prefer, require, verify-ca or verify-full"
                ))
            }
        };
        let kept: Vec<(String, String)> = pairs
            .into_iter()
            .filter(|(k, _)| k != "sslrootcert")
            .map(|(k, v)| match (k.as_str(), v.as_str()) {
                ("sslmode", "verify-ca" | "verify-full" | "allow") => (k, "require".to_string()),
                _ => (k, v),
            })
            .collect();
        if kept.is_empty() {
            parsed.set_query(None);
        } else {
            parsed.query_pairs_mut().clear().extend_pairs(kept);
        }
        Ok((tls, parsed.to_string()))
    }

    /// The rustls configuration for it (`None` for [`Tls::Off`]).
    pub(crate) fn client_config(&self) -> Result<Option<ClientConfig>, String> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = ClientConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .map_err(|e| e.to_string())?;
        let verifier: Arc<dyn ServerCertVerifier> = match self {
            Tls::Off => return Ok(None),
            Tls::Encrypt => Arc::new(Unchecked(provider)),
            Tls::Verify { name, roots } => {
                let mut store = RootCertStore::empty();
                match roots {
                    Some(path) => {
                        let certs = CertificateDer::pem_file_iter(path)
                            .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
                            .map_err(|e| format!("sslrootcert {}: {e}", path.display()))?;
                        if certs.is_empty() {
                            return Err(format!(
                                "sslrootcert {}: no certificate in it",
                                path.display()
                            ));
                        }
                        for cert in certs {
                            store
                                .add(cert)
                                .map_err(|e| format!("sslrootcert {}: {e}", path.display()))?;
                        }
                    }
                    None => {
                        store.add_parsable_certificates(
                            rustls_native_certs::load_native_certs().certs,
                        );
                    }
                }
                let webpki = WebPkiServerVerifier::builder_with_provider(Arc::new(store), provider)
                    .build()
                    .map_err(|e| e.to_string())?;
                if *name {
                    webpki
                } else {
                    Arc::new(ChainOnly(webpki))
                }
            }
        };
        Ok(Some(
            builder.dangerous().with_custom_certificate_verifier(verifier).with_no_client_auth(),
        ))
    }
}

/// `prefer`/`require`: any certificate, though its signature on the handshake is still checked
/// (it is real TLS, against an eavesdropper, not against an impostor — as libpq's).
#[derive(Debug)]
struct Unchecked(Arc<CryptoProvider>);

/// `verify-ca`: the chain checked, the name not.
#[derive(Debug)]
struct ChainOnly(Arc<WebPkiServerVerifier>);

impl ServerCertVerifier for Unchecked {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        let algorithms = &self.0.signature_verification_algorithms;
        rustls::crypto::verify_tls12_signature(message, cert, dss, algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        let algorithms = &self.0.signature_verification_algorithms;
        rustls::crypto::verify_tls13_signature(message, cert, dss, algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

impl ServerCertVerifier for ChainOnly {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match self.0.verify_server_cert(end_entity, intermediates, server_name, ocsp, now) {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verify_modes_and_root_files_are_taken_out_of_the_url() {
        let (tls, url) =
            Tls::take_from("postgres://u:p@h/db?sslmode=verify-full&sslrootcert=%2Fca.pem&x=1")
                .unwrap();
        assert_eq!(tls, Tls::Verify { name: true, roots: Some("/ca.pem".into()) });
        assert_eq!(url, "postgres://u:p@h/db?sslmode=require&x=1");
        assert_eq!(
            Tls::take_from("postgres://h/db").unwrap(),
            (Tls::Encrypt, "postgres://h/db".into())
        );
        assert_eq!(Tls::take_from("postgres://h/db?sslmode=disable").unwrap().0, Tls::Off);
        assert!(Tls::take_from("postgres://h/db?sslmode=sometimes")
            .unwrap_err()
            .contains("verify-full"));
    }
}
