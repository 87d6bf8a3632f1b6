//! The HTTP/3 engine: quinn-proto driven by one event loop per worker
//! thread (`event_loop`), HTTP/3 framing and QPACK written for a load
//! generator's client (`codec`), one connection's state (`conn`) and the
//! batched UDP socket (`socket`). `worker.rs` drives h1, h2, `auto` and
//! h3 with `--qlog` on tokio; this loop does the same work for h3 without
//! a runtime, a task per request or a lock per connection.

mod codec;
mod conn;
mod event_loop;
mod socket;

pub(crate) use event_loop::run_worker;
