//! The h1 and h2 engine: one event loop per worker thread over mio's epoll
//! (`event_loop`), each connection's bytes through rustls' sans-I/O client
//! (`transport`), and HTTP/1.1 and HTTP/2 written for a load generator's
//! client: framing, HPACK and response parsing (`h1codec`, `h2codec`), one
//! connection's state (`h1`, `h2`); with `--linger`, reads timed by the
//! kernel's receive stamps (`arrival`). `worker.rs` drives `auto` on tokio;
//! this loop does the same work for h1 and h2 without a runtime, a task
//! per request or a lock per connection.

mod arrival;
mod event_loop;
mod h1;
mod h1codec;
mod h2;
mod h2codec;
mod http;
mod timer;
mod transport;

pub(crate) use event_loop::run_worker;
