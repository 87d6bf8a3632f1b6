//! Link settings as people write them (RTT, rates, loss...), turned into the
//! configuration the model runs, plus the parsers for the command-line
//! forms (`50mbit`, `20ms`, `1%`, `100p`, `gilbert:...`, `down`,
//! `throttle:2mbit`).

mod direction;
mod overrides;
mod parse;
mod settings;
mod udp;

pub use crate::model::ReorderSpec;
pub use direction::LossDirection;
pub use overrides::Overrides;
pub use parse::{
    format_jitter, format_percent, format_queue, format_rate, format_reorder, format_time,
    parse_jitter, parse_percent, parse_queue, parse_rate, parse_reorder, parse_time, MAX_RATE_BITS,
    MAX_TIME,
};
pub use settings::{LinkConfig, LinkSettings, DEFAULT_QUEUE_FLOOR_BYTES};
pub use udp::parse_udp_policy;
