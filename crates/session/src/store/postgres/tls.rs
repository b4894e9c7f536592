//! TLS for the PostgreSQL store: libpq's `sslmode` over rustls (with the `ring` provider the
//! workspace uses elsewhere).
//!
//! | `sslmode` | encrypted | the server's certificate |
//! |---|---|---|
//! | `disable` | never | - |
//! | `prefer` (default) | when the server offers it; a failed handshake is retried in the clear | not checked |
//! | `require` | always | not checked |
//! | `verify-ca` | always | signed by a trusted authority |
//! | `verify-full` | always | signed by a trusted authority and naming the host connected to |
//!
//! The trusted authorities are those of the PEM file `sslrootcert` names, else the Mozilla roots
//! built in (`webpki-roots`; `sslrootcert=system` says so explicitly). As in libpq, `prefer` and
//! `require` check the chain (as `verify-ca`) when `sslrootcert` names a file.
//!
//! The postgres crate negotiates TLS itself (`SSLRequest`, or `sslnegotiation=direct`) and hands
//! the socket to [`MakeRustls`] for the handshake; it is told `prefer` for `prefer` and `require`
//! for the three modes that insist. No channel binding is offered (SCRAM authenticates without
//! it, as `channel_binding=prefer`, the default, allows).

use crate::store::StoreError;
use postgres::tls::{ChannelBinding, MakeTlsConnect, TlsConnect, TlsStream};
use postgres::Socket;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{verify_tls12_signature, verify_tls13_signature, CryptoProvider};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};
use std::future::Future;
use std::io;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// How the store uses TLS: libpq's `sslmode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SslMode {
    /// Never.
    Disable,
    /// When the server offers it, without checking its certificate.
    Prefer,
    /// Always, without checking the certificate.
    Require,
    /// Always, with a certificate signed by a trusted authority.
    VerifyCa,
    /// Always, with a certificate signed by a trusted authority for the host connected to.
    VerifyFull,
}

impl SslMode {
    /// Reads libpq's spelling.
    pub fn parse(s: &str) -> Result<SslMode, StoreError> {
        Ok(match s {
            "disable" => SslMode::Disable,
            "prefer" => SslMode::Prefer,
            "require" => SslMode::Require,
            "verify-ca" => SslMode::VerifyCa,
            "verify-full" => SslMode::VerifyFull,
            other => {
                return Err(StoreError::Backend(format!(
                    "postgres: sslmode `{other}`: expected disable, prefer, require, verify-ca or verify-full"
                )))
            }
        })
    }

    /// libpq's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            SslMode::Disable => "disable",
            SslMode::Prefer => "prefer",
            SslMode::Require => "require",
            SslMode::VerifyCa => "verify-ca",
            SslMode::VerifyFull => "verify-full",
        }
    }

    /// What the postgres crate is told: whether to ask for TLS and whether to insist.
    pub fn negotiation(self) -> postgres::config::SslMode {
        match self {
            SslMode::Disable => postgres::config::SslMode::Disable,
            SslMode::Prefer => postgres::config::SslMode::Prefer,
            SslMode::Require | SslMode::VerifyCa | SslMode::VerifyFull => {
                postgres::config::SslMode::Require
            }
        }
    }
}

/// The certificate authorities `sslrootcert` names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RootCerts {
    /// The built-in Mozilla roots (`sslrootcert=system`, and the default).
    System,
    /// A PEM file of one or more certificates.
    File(PathBuf),
}

/// How much of the server's certificate is checked.
enum Check {
    Nothing,
    Chain(Arc<RootCertStore>),
    ChainAndName(Arc<RootCertStore>),
}

/// The TLS handshake of the store's connections (the postgres crate's `MakeTlsConnect`).
#[derive(Clone)]
pub struct MakeRustls {
    config: Arc<ClientConfig>,
    mode: SslMode,
}

/// The connector for `mode`; `None` for `disable`. Reads `roots` (a missing or unreadable file,
/// or one without a certificate, is an error naming it).
pub fn connector(
    mode: SslMode,
    roots: Option<&RootCerts>,
) -> Result<Option<MakeRustls>, StoreError> {
    let check = match (mode, roots) {
        (SslMode::Disable, _) => return Ok(None),
        (SslMode::Prefer | SslMode::Require, None) => Check::Nothing,
        (SslMode::Prefer | SslMode::Require | SslMode::VerifyCa, roots) => {
            Check::Chain(load_roots(roots.unwrap_or(&RootCerts::System))?)
        }
        (SslMode::VerifyFull, roots) => {
            Check::ChainAndName(load_roots(roots.unwrap_or(&RootCerts::System))?)
        }
    };
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| StoreError::Backend(format!("postgres: TLS: {e}")))?;
    let mut config = match check {
        Check::ChainAndName(roots) => builder.with_root_certificates(roots),
        Check::Chain(roots) => builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(ChainOnly {
                roots: Some(roots),
                provider,
            })),
        Check::Nothing => builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(ChainOnly {
                roots: None,
                provider,
            })),
    }
    .with_no_client_auth();
    // PostgreSQL's ALPN name: required by `sslnegotiation=direct` (PostgreSQL 17), harmless
    // otherwise.
    config.alpn_protocols = vec![b"postgresql".to_vec()];
    Ok(Some(MakeRustls {
        config: Arc::new(config),
        mode,
    }))
}

fn load_roots(roots: &RootCerts) -> Result<Arc<RootCertStore>, StoreError> {
    let path = match roots {
        RootCerts::System => {
            return Ok(Arc::new(RootCertStore {
                roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
            }))
        }
        RootCerts::File(path) => path,
    };
    let bad = |why: String| {
        StoreError::Backend(format!("postgres: sslrootcert `{}`: {why}", path.display()))
    };
    let pem = std::fs::read(path).map_err(|e| match e.kind() {
        io::ErrorKind::NotFound => bad("no such file".to_owned()),
        _ => bad(e.to_string()),
    })?;
    let mut store = RootCertStore::empty();
    for (i, cert) in CertificateDer::pem_slice_iter(&pem).enumerate() {
        let cert = cert.map_err(|e| bad(format!("not a PEM file: {e}")))?;
        store
            .add(cert)
            .map_err(|e| bad(format!("certificate {}: {e}", i + 1)))?;
    }
    if store.is_empty() {
        return Err(bad("no certificate in it".to_owned()));
    }
    Ok(Arc::new(store))
}

/// The verifier of `verify-ca` (and of `prefer` and `require`, which check nothing without
/// roots): the chain up to a trusted authority, not the name. The handshake's signatures are
/// always checked (the server holds the key of the certificate it shows).
#[derive(Debug)]
struct ChainOnly {
    roots: Option<Arc<RootCertStore>>,
    provider: Arc<CryptoProvider>,
}

impl ServerCertVerifier for ChainOnly {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        if let Some(roots) = &self.roots {
            let cert = rustls::server::ParsedCertificate::try_from(end_entity)?;
            rustls::client::verify_server_cert_signed_by_trust_anchor(
                &cert,
                roots,
                intermediates,
                now,
                self.provider.signature_verification_algorithms.all,
            )?;
        }
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(
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
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

/// A failed TLS handshake: which mode, which host, and rustls's reason.
#[derive(Debug)]
pub struct HandshakeError {
    mode: SslMode,
    host: String,
    reason: String,
}

impl std::fmt::Display for HandshakeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "sslmode={} with `{}`: {}",
            self.mode.as_str(),
            self.host,
            self.reason
        )
    }
}

impl std::error::Error for HandshakeError {}

/// True when `e` is a TLS handshake of ours that failed (`prefer` then tries without TLS).
pub fn is_handshake_failure(e: &postgres::Error) -> bool {
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        if s.is::<HandshakeError>() {
            return true;
        }
        source = s.source();
    }
    false
}

impl MakeTlsConnect<Socket> for MakeRustls {
    type Stream = RustlsStream;
    type TlsConnect = RustlsConnect;
    type Error = std::convert::Infallible;

    fn make_tls_connect(&mut self, domain: &str) -> Result<RustlsConnect, Self::Error> {
        // The name is checked in `connect`: the postgres crate asks for a connector even for a
        // Unix socket (an empty name), where it never starts TLS.
        Ok(RustlsConnect {
            config: self.config.clone(),
            mode: self.mode,
            host: domain.to_owned(),
        })
    }
}

/// One connection's handshake.
pub struct RustlsConnect {
    config: Arc<ClientConfig>,
    mode: SslMode,
    host: String,
}

impl TlsConnect<Socket> for RustlsConnect {
    type Stream = RustlsStream;
    type Error = HandshakeError;
    type Future = Pin<Box<dyn Future<Output = Result<RustlsStream, HandshakeError>> + Send>>;

    fn connect(self, stream: Socket) -> Self::Future {
        Box::pin(async move {
            let failed = |reason: String| HandshakeError {
                mode: self.mode,
                host: self.host.clone(),
                reason,
            };
            let name = ServerName::try_from(self.host.clone())
                .map_err(|e| failed(format!("not a host name to check: {e}")))?;
            tokio_rustls::TlsConnector::from(self.config.clone())
                .connect(name, stream)
                .await
                .map(|s| RustlsStream(Box::new(s)))
                .map_err(|e| failed(e.to_string()))
        })
    }
}

/// A connection over TLS.
pub struct RustlsStream(Box<tokio_rustls::client::TlsStream<Socket>>);

impl TlsStream for RustlsStream {
    fn channel_binding(&self) -> ChannelBinding {
        ChannelBinding::none()
    }
}

impl AsyncRead for RustlsStream {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut *self.0).poll_read(cx, buf)
    }
}

impl AsyncWrite for RustlsStream {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut *self.0).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut *self.0).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.0.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut *self.0).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut *self.0).poll_shutdown(cx)
    }
}
