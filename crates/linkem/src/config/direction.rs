//! Which way random loss drops packets, as `--loss-direction` names it.

use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::model::Way;

/// Which way random loss drops packets. A `tc netem` loss sits on one
/// interface's egress, so a published loss figure is one direction's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase", try_from = "String")]
pub enum LossDirection {
    /// Server to client only, as netem on the server's egress: the default.
    #[default]
    Down,
    /// Client to server only.
    Up,
    /// Each direction independently: a round trip sees about twice the loss.
    Both,
}

impl LossDirection {
    pub(super) fn applies_to(self, way: Way) -> bool {
        match self {
            LossDirection::Down => way == Way::Down,
            LossDirection::Up => way == Way::Up,
            LossDirection::Both => true,
        }
    }

    /// The value's name and what it means, e.g. `down: server to client`.
    pub fn describe(self) -> &'static str {
        match self {
            LossDirection::Down => "down: server to client",
            LossDirection::Up => "up: client to server",
            LossDirection::Both => "both: each way",
        }
    }
}

impl FromStr for LossDirection {
    type Err = anyhow::Error;

    /// `down`, `up` or `both`, in any case.
    fn from_str(text: &str) -> anyhow::Result<LossDirection> {
        match text.trim().to_ascii_lowercase().as_str() {
            "down" => Ok(LossDirection::Down),
            "up" => Ok(LossDirection::Up),
            "both" => Ok(LossDirection::Both),
            _ => anyhow::bail!(
                "`{text}` is not a loss direction; write `down` (server to client), \
                 `up` (client to server) or `both`"
            ),
        }
    }
}

impl std::fmt::Display for LossDirection {
    /// The name `FromStr` reads: `down`, `up` or `both`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            LossDirection::Down => "down",
            LossDirection::Up => "up",
            LossDirection::Both => "both",
        })
    }
}

impl TryFrom<String> for LossDirection {
    type Error = anyhow::Error;

    fn try_from(text: String) -> anyhow::Result<LossDirection> {
        text.parse()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loss_directions_parse_and_bad_ones_name_the_accepted_values() {
        assert_eq!(
            "down".parse::<LossDirection>().unwrap(),
            LossDirection::Down
        );
        assert_eq!(" UP ".parse::<LossDirection>().unwrap(), LossDirection::Up);
        assert_eq!(
            "both".parse::<LossDirection>().unwrap(),
            LossDirection::Both
        );
        for bad in ["sideways", "", "downstream"] {
            let message = format!("{:#}", bad.parse::<LossDirection>().unwrap_err());
            assert!(
                message.contains(&format!("`{bad}` is not a loss direction"))
                    && ["`down`", "`up`", "`both`"]
                        .iter()
                        .all(|name| message.contains(name)),
                "{message}"
            );
        }
        assert_eq!(LossDirection::default(), LossDirection::Down);
        for direction in [LossDirection::Down, LossDirection::Up, LossDirection::Both] {
            assert_eq!(
                direction.to_string().parse::<LossDirection>().unwrap(),
                direction
            );
        }
    }
}
