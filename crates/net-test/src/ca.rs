//! [`TestCa`]: a private certificate authority, its PEM in a temporary file.

use crate::io_error;
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, KeyUsagePurpose};
use rustls_pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

/// Distinguishes the files of the CAs one process makes.
static NEXT: AtomicUsize = AtomicUsize::new(0);

/// A private CA. Its certificate is written to [`TestCa::pem_file`] (removed on drop).
pub struct TestCa {
    issuer: Issuer<'static, KeyPair>,
    cert: CertificateDer<'static>,
    pem_file: PathBuf,
}

impl std::fmt::Debug for TestCa {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TestCa")
            .field("pem_file", &self.pem_file)
            .finish_non_exhaustive()
    }
}

impl TestCa {
    /// A new CA named `name` (its certificate's common name).
    pub fn new(name: &str) -> io::Result<TestCa> {
        let key = KeyPair::generate().map_err(io_error)?;
        let mut params = CertificateParams::new(Vec::<String>::new()).map_err(io_error)?;
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(DnType::CommonName, name);
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let cert = params.self_signed(&key).map_err(io_error)?;
        let pem_file = std::env::temp_dir().join(format!(
            "compact-test-ca-{}-{}.pem",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::write(&pem_file, cert.pem())?;
        Ok(TestCa {
            cert: cert.der().clone(),
            issuer: Issuer::new(params, key),
            pem_file,
        })
    }

    /// The file holding the CA's certificate (PEM).
    pub fn pem_file(&self) -> &Path {
        &self.pem_file
    }

    /// The CA's certificate.
    pub fn cert(&self) -> &CertificateDer<'static> {
        &self.cert
    }

    /// A certificate for `localhost` and `127.0.0.1` signed by this CA, with its key.
    pub fn server_cert(
        &self,
    ) -> io::Result<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>)> {
        let key = KeyPair::generate().map_err(io_error)?;
        let mut params =
            CertificateParams::new(vec!["localhost".to_owned(), "127.0.0.1".to_owned()])
                .map_err(io_error)?;
        params
            .distinguished_name
            .push(DnType::CommonName, "localhost");
        let cert = params.signed_by(&key, &self.issuer).map_err(io_error)?;
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der()));
        Ok((vec![cert.der().clone(), self.cert.clone()], key))
    }
}

impl Drop for TestCa {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.pem_file);
    }
}
