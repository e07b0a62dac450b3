//! TLS for `pssl:` and `ssl:` (rustls), configured as Open vSwitch's SSL
//! connections are: the switch's `--private-key` and `--certificate`, and
//! `--ca-cert`, the CA that must have signed the peer's certificate, both
//! ways (mutual TLS). As in Open vSwitch, a controller's certificate is
//! checked against the CA only, not against the address connected to.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::WebPkiSupportedAlgorithms;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::server::{ParsedCertificate, WebPkiClientVerifier};
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, ServerConfig, SignatureScheme};

use super::error::ChannelError;

/// The files of a TLS endpoint, as `ovs-ofctl` and `ovs-vswitchd` take
/// them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TlsFiles {
    /// `--private-key`: the switch's key (PEM).
    pub private_key: PathBuf,
    /// `--certificate`: the switch's certificate (PEM), signed by a CA the
    /// peer trusts.
    pub certificate: PathBuf,
    /// `--ca-cert`: the CA certificate(s) (PEM) a peer's certificate must
    /// be signed by.
    pub ca_cert: PathBuf,
}

/// Both sides' configurations, loaded once.
#[derive(Clone)]
pub(crate) struct TlsConfig {
    pub(crate) server: Arc<ServerConfig>,
    pub(crate) client: Arc<ClientConfig>,
}

fn tls_error(path: &Path, why: impl std::fmt::Display) -> ChannelError {
    ChannelError::Tls {
        path: path.display().to_string(),
        why: why.to_string(),
    }
}

impl TlsConfig {
    pub(crate) fn load(files: &TlsFiles) -> Result<TlsConfig, ChannelError> {
        let certs = certificates(&files.certificate)?;
        let key = PrivateKeyDer::from_pem_file(&files.private_key)
            .map_err(|e| tls_error(&files.private_key, format!("no private key: {e}")))?;
        let mut roots = RootCertStore::empty();
        for ca in certificates(&files.ca_cert)? {
            roots
                .add(ca)
                .map_err(|e| tls_error(&files.ca_cert, format!("not a CA certificate: {e}")))?;
        }
        let roots = Arc::new(roots);
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let verifier = WebPkiClientVerifier::builder_with_provider(roots.clone(), provider.clone())
            .build()
            .map_err(|e| tls_error(&files.ca_cert, e))?;
        let server = ServerConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .map_err(|e| tls_error(&files.certificate, e))?
            .with_client_cert_verifier(verifier)
            .with_single_cert(certs.clone(), key.clone_key())
            .map_err(|e| tls_error(&files.private_key, format!("key and certificate: {e}")))?;
        let client = ClientConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .map_err(|e| tls_error(&files.certificate, e))?
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(SignedByCa {
                roots,
                algorithms: provider.signature_verification_algorithms,
            }))
            .with_client_auth_cert(certs, key)
            .map_err(|e| tls_error(&files.private_key, format!("key and certificate: {e}")))?;
        Ok(TlsConfig {
            server: Arc::new(server),
            client: Arc::new(client),
        })
    }
}

/// Every certificate in a PEM file (at least one).
fn certificates(path: &Path) -> Result<Vec<CertificateDer<'static>>, ChannelError> {
    let certs = CertificateDer::pem_file_iter(path)
        .map_err(|e| tls_error(path, e))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| tls_error(path, e))?;
    if certs.is_empty() {
        return Err(tls_error(path, "no certificate in the file"));
    }
    Ok(certs)
}

/// A controller's certificate must chain to the CA; its names are not
/// looked at (Open vSwitch does not either: a controller is named by its
/// address, which certificates rarely hold).
#[derive(Debug)]
struct SignedByCa {
    roots: Arc<RootCertStore>,
    algorithms: WebPkiSupportedAlgorithms,
}

impl ServerCertVerifier for SignedByCa {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let cert = ParsedCertificate::try_from(end_entity)?;
        rustls::client::verify_server_cert_signed_by_trust_anchor(
            &cert,
            &self.roots,
            intermediates,
            now,
            self.algorithms.all,
        )?;
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}
