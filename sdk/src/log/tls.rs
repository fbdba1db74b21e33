//! TLS settings of an Iggy URL, in a leaf of their own: the URL parser reads them with or
//! without the `iggy` feature, and the Iggy options take them.

use std::path::PathBuf;

/// TLS to an Iggy server (`iggys://`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IggyTls {
    /// `tls_ca_file=<pem>`: the certificate authority to trust (default: the web's roots).
    pub ca_file: Option<PathBuf>,
    /// `tls_domain=<name>`: the name the server's certificate must carry (default: the URL's
    /// host).
    pub domain: Option<String>,
}
