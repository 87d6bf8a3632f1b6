//! `linkem`: a user-space network link emulator for h3lab.
//!
//! It is for putting a client and a server on opposite ends of an emulated
//! path (delay, jitter, rate or trace, drop-tail queue, random or bursty
//! loss, reordering, duplication) without kernel netem: two network
//! namespaces joined by TUN devices, with this process forwarding packets
//! through a pure, seeded link model. TCP and UDP cross the same path.
//!
//! For a site behind an edge (a CDN or reverse proxy), a path can get an
//! origin leg ([`EmulatedPath::add_origin_leg`]): a third namespace, the
//! origin's, joined to the server namespace (where the edge runs) by a
//! second emulated link with its own RTT, rate, loss and seed, and its own
//! statistics. The client cannot reach the origin: only the edge, a proxy
//! at layer 7, carries requests from one leg to the other.
//!
//! It starts programs at either end of a path (`run`) through h3lab's
//! process supervisor (`h3lab-supervise`).
//!
//! It is not a traffic generator, a measurement tool or a general-purpose
//! network simulator: it only carries packets between the namespaces.

#![warn(missing_docs)]

pub mod capacity;
pub mod config;
pub mod cpus;
pub mod env;
#[cfg(feature = "fuzzing")]
pub mod fuzzing;
pub mod model;
mod profiles;
pub mod run;
mod shell;

pub use config::LinkSettings;
pub use model::RateSpec;
pub use profiles::{profile, profiles, Profile};
pub use shell::{cleanup_stale, EmulatedPath, PathControl, PathStats};
