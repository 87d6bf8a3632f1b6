//! HTTP/1.1, HTTP/2 and HTTP/3 client connectors for h3lab's load engine and
//! benchmarks: URL validation, rustls configuration (ALPN, `--insecure`,
//! `--ca`, session tickets), timed connection set-up and a small request
//! interface that counts response bytes without copying them; and the
//! `auto` protocol, HTTP/3 discovered through `Alt-Svc` and raced against
//! TCP as browsers do (`alt_svc`, the pure rules; `race`, their shell);
//! name resolution with a host's DNS `HTTPS` record, the ALPN ids it
//! advertises before any connection (`DnsResolver`).
//!
//! Not for: scheduling load, recording statistics or following redirects;
//! that is the job of `h3lab-load` and `h3lab-bench`.

#![warn(missing_docs)]

pub mod alt_svc;
mod browser_headers;
mod connect;
mod dns;
mod error;
mod h3_features;
mod marks;
mod mute;
mod offer;
mod race;
mod request;
mod response;
mod send;
mod target;
mod tls;
mod ttfb;

pub use connect::{
    no_h2_in_alpn, no_quic_answer, quic_client_config, tcp_connect_error, tcp_connect_timeout,
    tcp_rtt, tls_handshake_timeout, udp_socket, ConnectTiming, Connection, Connector,
};
pub use dns::{https_record_name, DnsResolver, HttpsRecord, NameServer, OriginLookup};
pub use error::{h3_code_name, quic_connect_error, tls_failure, ClientError};
pub use h3_features::check_h3_features;
pub use offer::check_offer;
pub use race::{AutoConnector, OriginConnector, SharedDiscovery};
pub use request::{RequestNumbers, RequestTemplate};
pub use response::Response;
pub use send::{PathFrames, Sender};
pub use target::{ResolveRule, Scheme, Target};
pub use tls::{client_tls_config, system_roots, TlsOptions};
pub use ttfb::{measure_ttfb, ModeNotOffered};
