//! Why an OpenFlow channel could not be opened.

/// A channel that cannot listen or connect where it was told.
#[derive(Debug, thiserror::Error)]
pub enum ChannelError {
    /// Binding, listening or preparing a socket failed.
    #[error("{endpoint}: {source}")]
    Io {
        endpoint: String,
        source: std::io::Error,
    },
    /// A key, certificate or CA file that cannot be used.
    #[error("{path}: {why}")]
    Tls { path: String, why: String },
    /// A `pssl:` or `ssl:` endpoint without its files.
    #[error("{0} needs --private-key, --certificate and --ca-cert")]
    TlsFilesMissing(String),
    /// Something other than a socket is where a `punix:` socket goes: it
    /// is left alone.
    #[error("punix:{0}: exists and is not a socket (not replaced)")]
    NotASocket(String),
    /// A switch answers on the `punix:` socket already.
    #[error("punix:{0}: another switch is listening there")]
    InUse(String),
    /// A socket path a unix socket address cannot hold.
    #[error("punix:{0}: {1}")]
    BadPath(String, &'static str),
}
