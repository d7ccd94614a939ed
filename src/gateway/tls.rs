//! Optional TLS for the gateway (§12): when `gateway.tls_cert` and
//! `gateway.tls_key` name PEM files, every accepted connection starts with
//! a TLS handshake (rustls, `ring` provider, TLS 1.2 and 1.3, ALPN
//! `http/1.1`) before HTTP and the WebSocket upgrade.
//!
//! The certificate file holds the chain, leaf first; the key file one
//! PKCS#8, PKCS#1 (RSA) or SEC1 (EC) private key. A relative path is taken
//! relative to the config dir. Both are read once, at startup; any problem
//! is a startup failure naming the file.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::TlsAcceptor;

use super::GatewayError;

/// The acceptor for `cert`/`key`, or `None` when neither is set.
pub(super) fn acceptor(
    config_dir: &Path,
    cert: Option<&str>,
    key: Option<&str>,
) -> Result<Option<TlsAcceptor>, GatewayError> {
    let (cert, key) = match (cert, key) {
        (None, None) => return Ok(None),
        (Some(c), Some(k)) => (resolve(config_dir, c), resolve(config_dir, k)),
        _ => {
            return Err(GatewayError::Tls(
                "gateway.tls_cert and gateway.tls_key must be set together".into(),
            ))
        }
    };
    let fail = |path: &Path, what: &str, e: &dyn std::fmt::Display| {
        GatewayError::Tls(format!("{what} {}: {e}", path.display()))
    };
    let chain = CertificateDer::pem_file_iter(&cert)
        .map_err(|e| fail(&cert, "cannot read the certificate", &e))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| fail(&cert, "cannot parse the certificate", &e))?;
    if chain.is_empty() {
        return Err(fail(
            &cert,
            "no certificate in",
            &"no PEM CERTIFICATE section",
        ));
    }
    let private_key = PrivateKeyDer::from_pem_file(&key)
        .map_err(|e| fail(&key, "cannot read the private key", &e))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| GatewayError::Tls(e.to_string()))?
        .with_no_client_auth()
        .with_single_cert(chain, private_key)
        .map_err(|e| {
            fail(
                &cert,
                "the certificate and key do not form a usable pair:",
                &e,
            )
        })?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Some(TlsAcceptor::from(Arc::new(config))))
}

fn resolve(config_dir: &Path, path: &str) -> PathBuf {
    let p = Path::new(path);
    if p.is_absolute() {
        p.to_owned()
    } else {
        config_dir.join(p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(r: Result<Option<TlsAcceptor>, GatewayError>) -> String {
        match r {
            Ok(_) => panic!("accepted"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn both_or_neither() {
        let dir = Path::new("/nonexistent");
        assert!(acceptor(dir, None, None).unwrap().is_none());
        for (c, k) in [(Some("c.pem"), None), (None, Some("k.pem"))] {
            let e = err(acceptor(dir, c, k));
            assert!(e.contains("must be set together"), "{e}");
        }
    }

    #[test]
    fn a_missing_file_is_named() {
        let e = err(acceptor(
            Path::new("/nonexistent"),
            Some("c.pem"),
            Some("/k.pem"),
        ));
        let named = Path::new("/nonexistent").join("c.pem");
        assert!(e.contains(&named.display().to_string()), "{e}");
    }

    #[test]
    fn relative_paths_are_under_the_config_dir() {
        assert_eq!(
            resolve(Path::new("/cfg"), "tls/c.pem"),
            PathBuf::from("/cfg/tls/c.pem")
        );
        assert_eq!(
            resolve(Path::new("/cfg"), "/c.pem"),
            PathBuf::from("/c.pem")
        );
    }
}
