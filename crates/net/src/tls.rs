//! The TLS side: the trusted roots (the system's, the Mozilla roots when there are none, and the
//! configured bundles) and the rustls configuration every connection uses.

use crate::error::NetError;
use rustls::crypto::ring;
use rustls::{ClientConfig, RootCertStore};
use rustls_pki_types::pem::PemObject as _;
use rustls_pki_types::CertificateDer;
use std::path::Path;

/// Where the trusted roots came from (for the start-up line and tests).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RootCounts {
    /// Roots from the system's store.
    pub system: usize,
    /// Mozilla roots added because the system gave none.
    pub webpki: usize,
    /// Roots from configured bundles (`network.ca_file`, `SSL_CERT_FILE`).
    pub configured: usize,
}

/// The roots: the system's; the Mozilla roots when the system has none; each bundle of `extra`.
/// An unreadable bundle, or one holding no certificate, is an error naming the file and the
/// setting it came from.
pub(crate) fn roots(extra: &[(&Path, &str)]) -> Result<(RootCertStore, RootCounts), NetError> {
    let (system, system_counts) = system_roots();
    let mut store = system.clone();
    let mut counts = *system_counts;
    for (path, setting) in extra {
        let bad = |why: String| NetError::CaFile {
            path: path.display().to_string(),
            setting: (*setting).to_owned(),
            message: why,
        };
        let certs = CertificateDer::pem_file_iter(path)
            .map_err(|e| bad(e.to_string()))?
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| bad(e.to_string()))?;
        if certs.is_empty() {
            return Err(bad("no PEM certificate in it".to_owned()));
        }
        for cert in certs {
            store
                .add(cert)
                .map_err(|e| bad(format!("a certificate was refused: {e}")))?;
            counts.configured += 1;
        }
    }
    Ok((store, counts))
}

/// The system's roots (the Mozilla roots when it has none), read and parsed once per process:
/// every client a process builds (a proxy's, each Python manager's, each summariser's) trusts the
/// same store, and reading the system bundle is the costly part of building one.
fn system_roots() -> &'static (RootCertStore, RootCounts) {
    static SYSTEM: std::sync::OnceLock<(RootCertStore, RootCounts)> = std::sync::OnceLock::new();
    SYSTEM.get_or_init(|| {
        let mut store = RootCertStore::empty();
        let mut counts = RootCounts::default();
        // Errors of single system files are not fatal: whatever loaded is used.
        let system = rustls_native_certs::load_native_certs();
        let (added, _ignored) = store.add_parsable_certificates(system.certs);
        counts.system = added;
        if counts.system == 0 {
            store.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
            counts.webpki = webpki_roots::TLS_SERVER_ROOTS.len();
        }
        (store, counts)
    })
}

/// The rustls configuration: `roots`, the ring provider (explicit: the process default would
/// panic if two providers were ever compiled in), TLS 1.2 and 1.3, ALPN `h2` then `http/1.1`
/// (set by the connector).
pub(crate) fn client_config(roots: RootCertStore) -> Result<ClientConfig, NetError> {
    let config = ClientConfig::builder_with_provider(std::sync::Arc::new(ring::default_provider()))
        .with_safe_default_protocol_versions()
        .map_err(|e| NetError::Config(format!("TLS setup: {e}")))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(config)
}
