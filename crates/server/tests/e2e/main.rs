//! End-to-end tests: the server on an ephemeral loopback port, driven by real
//! h1, h2 and h3 clients.

mod app;
mod common;
mod doc_site;
mod edge;
mod endpoints;
mod h3_setup;
mod header_blocks;
mod limits;
mod metrics;
mod priority;
mod qlog;
mod quic_tuning;
mod relay;
mod replay;
mod resumption;
mod shutdown;
mod site;
mod static_files;
mod tcp_tuning;
mod tls_records;
