//! `h3lab.offer/1`: what an origin offers, as `h3lab probe offer` and a
//! field run's check find it before anything is measured.

use serde::{Deserialize, Serialize};

use crate::Proto;

/// Schema tag of [`OfferReport`].
pub const OFFER_SCHEMA: &str = "h3lab.offer/1";

/// The origins checked, in the order asked.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OfferReport {
    /// Always [`OFFER_SCHEMA`].
    pub schema: String,
    /// One per origin.
    pub origins: Vec<OriginOffer>,
}

/// What one origin offers. `true` and `false` are what the origin
/// answered; null means it could not be told (the origin was unreachable,
/// or its certificate was refused before ALPN was settled).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OriginOffer {
    /// `https://host:port`.
    pub origin: String,
    /// The address checked (and measured), `ip:port`; null when the host
    /// did not resolve.
    pub address: Option<String>,
    /// HTTP/1.1: the server agreed to `http/1.1` in ALPN, or chose none.
    pub h1: Option<bool>,
    /// HTTP/2: the server agreed to `h2` in ALPN.
    pub h2: Option<bool>,
    /// HTTP/3: a QUIC handshake with ALPN `h3` completed.
    pub h3: Option<bool>,
    /// The `Alt-Svc` header of its answer to a GET over TCP, as sent;
    /// null when it sent none.
    pub alt_svc: Option<String>,
    /// Why a protocol is `false` or null, one line each.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// What its h3 does beyond the handshake, where `probe offer` asked
    /// (a field run's check does not).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub h3_features: Option<H3Features>,
}

/// What an h3 server does, each read from what it sent, not from its
/// documentation; null where it could not be told.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct H3Features {
    /// Its `server` header over h3; null when it sent none.
    pub server_header: Option<String>,
    /// Whether a request sent as 0-RTT early data on a later connection
    /// was accepted: false when the server gave no ticket that allows
    /// early data, or refused the data.
    pub zero_rtt: Option<bool>,
    /// `SETTINGS_QPACK_MAX_TABLE_CAPACITY` from its SETTINGS frame: 0 is
    /// no QPACK dynamic table (RFC 9204 §3.2.3).
    pub qpack_max_table_capacity: Option<u64>,
    /// Whether its connection carried on after the client moved to a new
    /// UDP port (a NAT rebinding; RFC 9000 §9): a request on it was
    /// answered.
    pub survives_new_port: Option<bool>,
    /// Response body bytes that arrived within one round trip of the
    /// response's head, before an acknowledgement of any of them could
    /// reach the server: its initial congestion window, give or take the
    /// few handshake bytes still in flight and the frame overhead. Null
    /// on a path whose round trip is too short to tell the first flight
    /// from the next, or when the body ended within it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_round_trip_bytes: Option<u64>,
    /// Its window before and after one datagram the client dropped on
    /// purpose, one entry per try that could be counted: how its
    /// congestion controller answers a loss
    /// ([`H3Features::congestion_family`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub loss_windows: Vec<LossWindows>,
    /// Why a question is null, one line each.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// A server's congestion window just before and just after one lost
/// datagram, each read as what it sent once the client fell silent (as
/// its initial window is), in bytes of UDP payload, the same point of the
/// same response on two connections of its own: one that lost nothing,
/// and one whose client dropped a datagram there.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct LossWindows {
    /// The window where the datagram would be dropped, with no loss.
    pub before_bytes: u64,
    /// The window once the server knew of the loss, before it heard of
    /// anything it sent after that.
    pub after_bytes: u64,
}

/// The families of congestion controllers one loss tells apart, named by
/// what the server did, not by what it says it runs: a controller that
/// cuts its window to half reads `Reno` whatever its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CongestionFamily {
    /// Cut its window to about half (NewReno's β = 0.5, RFC 9002 §7.3.2).
    Reno,
    /// Cut it to about 0.7 (CUBIC's β = 0.7, RFC 9438 §4.6).
    Cubic,
    /// Kept it and grew on: a model-based controller such as BBR.
    Bbr,
}

impl LossWindows {
    /// The window after the loss over the window before it; `None` when
    /// there was none before.
    pub fn ratio(&self) -> Option<f64> {
        (self.before_bytes > 0).then(|| self.after_bytes as f64 / self.before_bytes as f64)
    }
}

impl CongestionFamily {
    /// The family a window after a loss over the window before it reads
    /// as; `None` where two readings meet: between 0.62 and 0.66 (a
    /// halving or a cut to 0.7), and between 0.9 and 1.1 (no cut, but no
    /// growth either: a BBR that held its window through recovery, or a
    /// window held by something else: nginx-h3 reads 1.02, 67 KB before
    /// and after, as its 64 KB stream buffer would hold it). The bounds
    /// lie between what was read on `broadband` and over 40 ms
    /// (2026-12-03, medians of five tries, three runs each): `h3lab serve
    /// --quic-cc` newreno 0.49 to 0.56, cubic 0.71 to 0.83, bbr 1.91 to
    /// 2.12; quic-go, ngtcp2 and quiche (CUBIC) 0.70 to 0.72; picoquic
    /// 0.56; tquic (BBR) 1.15 and 1.16.
    pub fn of_ratio(ratio: f64) -> Option<CongestionFamily> {
        match ratio {
            ratio if ratio.is_nan() || ratio < 0.0 => None,
            ratio if ratio < 0.62 => Some(CongestionFamily::Reno),
            ratio if ratio < 0.66 => None,
            ratio if ratio < 0.9 => Some(CongestionFamily::Cubic),
            ratio if ratio < 1.1 => None,
            _ => Some(CongestionFamily::Bbr),
        }
    }
}

impl std::fmt::Display for CongestionFamily {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            CongestionFamily::Reno => "Reno-like",
            CongestionFamily::Cubic => "CUBIC-like",
            CongestionFamily::Bbr => "BBR-like",
        })
    }
}

impl H3Features {
    /// `server h3lab, 0-RTT yes, QPACK dynamic table 4096 B, survives a
    /// new client port yes`.
    pub fn describe(&self) -> String {
        format!(
            "server {}, 0-RTT {}, QPACK dynamic table {}, survives a new client port {}, \
             first round trip {}, after one loss {}",
            self.server_header.as_deref().unwrap_or("(no header)"),
            answer(self.zero_rtt),
            self.qpack_table(),
            answer(self.survives_new_port),
            self.first_flight(),
            self.loss_response()
        )
    }

    /// The window after the loss over the window before it, each the
    /// median of the tries (on connections of their own, windows at the
    /// same point of the same response differ by a tenth or so); `None`
    /// with fewer than two tries.
    pub fn loss_ratio(&self) -> Option<f64> {
        if self.loss_windows.len() < 2 {
            return None;
        }
        let median = |bytes: fn(&LossWindows) -> u64| {
            let mut all: Vec<u64> = self.loss_windows.iter().map(bytes).collect();
            all.sort_unstable();
            all[all.len() / 2]
        };
        LossWindows {
            before_bytes: median(|w| w.before_bytes),
            after_bytes: median(|w| w.after_bytes),
        }
        .ratio()
    }

    /// The family the tries' [`H3Features::loss_ratio`] reads as.
    pub fn congestion_family(&self) -> Option<CongestionFamily> {
        CongestionFamily::of_ratio(self.loss_ratio()?)
    }

    /// `CUBIC-like (x0.71)`; `? (x0.64)` where two readings meet; `?`
    /// when not read.
    pub fn loss_response(&self) -> String {
        match (self.congestion_family(), self.loss_ratio()) {
            (Some(family), Some(ratio)) => format!("{family} (x{ratio:.2})"),
            (None, Some(ratio)) => format!("? (x{ratio:.2})"),
            (_, None) => "?".to_string(),
        }
    }

    /// What arrived in the first round trip: `14.2 KB (~12 packets)`, or `?`.
    pub fn first_flight(&self) -> String {
        match self.first_round_trip_bytes {
            // 1200 bytes: QUIC's smallest datagram, the unit of most
            // stacks' initial windows (RFC 9002 §7.2).
            Some(bytes) => format!(
                "{:.1} KB (~{} packets)",
                bytes as f64 / 1000.0,
                (bytes as f64 / 1200.0).round()
            ),
            None => "?".to_string(),
        }
    }

    /// The QPACK dynamic table it allows: `4096 B`, `none`, or `?`.
    pub fn qpack_table(&self) -> String {
        match self.qpack_max_table_capacity {
            Some(0) => "none".to_string(),
            Some(bytes) => format!("{bytes} B"),
            None => "?".to_string(),
        }
    }
}

impl OriginOffer {
    /// What the origin said of `proto`; `auto` is offered when h1 or h2 is.
    pub fn offers(&self, proto: Proto) -> Option<bool> {
        match proto {
            Proto::H1 => self.h1,
            Proto::H2 => self.h2,
            Proto::H3 => self.h3,
            Proto::Auto => match (self.h1, self.h2) {
                (Some(true), _) | (_, Some(true)) => Some(true),
                (Some(false), Some(false)) => Some(false),
                _ => None,
            },
        }
    }

    /// Why a run forcing `proto` cannot measure this origin, naming it;
    /// `None` when the origin offers it.
    pub fn refusal(&self, proto: Proto) -> Option<String> {
        let why = match self.notes.is_empty() {
            true => String::new(),
            false => format!(" ({})", self.notes.join("; ")),
        };
        match self.offers(proto) {
            Some(true) => None,
            Some(false) => Some(format!(
                "{} does not offer {proto}: it offers {}{why}; drop {proto} from the protocols, or use auto",
                self.origin,
                self.offered()
            )),
            None => Some(format!("{} could not be checked for {proto}{why}", self.origin)),
        }
    }

    /// The protocols offered, `h1, h2` or `none`.
    pub fn offered(&self) -> String {
        let offered: Vec<&str> = [
            (Proto::H1, self.h1),
            (Proto::H2, self.h2),
            (Proto::H3, self.h3),
        ]
        .into_iter()
        .filter(|(_, offered)| *offered == Some(true))
        .map(|(proto, _)| proto.name())
        .collect();
        match offered.is_empty() {
            true => "none".to_string(),
            false => offered.join(", "),
        }
    }
}

/// What an origin said of a protocol, in a word: `yes`, `no`, or `?` when
/// it could not be asked.
pub fn answer(offered: Option<bool>) -> &'static str {
    match offered {
        Some(true) => "yes",
        Some(false) => "no",
        None => "?",
    }
}

/// One line per origin, as `probe offer` prints it.
impl std::fmt::Display for OfferReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (i, offer) in self.origins.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(
                f,
                "{}  {}  h1 {}  h2 {}  h3 {}  alt-svc: {}",
                offer.origin,
                offer.address.as_deref().unwrap_or("unresolved"),
                answer(offer.h1),
                answer(offer.h2),
                answer(offer.h3),
                offer.alt_svc.as_deref().unwrap_or("none"),
            )?;
            if let Some(features) = &offer.h3_features {
                write!(f, "\n  h3: {}", features.describe())?;
                for note in &features.notes {
                    write!(f, "\n  h3: {note}")?;
                }
            }
            for note in &offer.notes {
                write!(f, "\n  {note}")?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn offer(h1: Option<bool>, h2: Option<bool>, h3: Option<bool>) -> OriginOffer {
        OriginOffer {
            origin: "https://www.site.test:443".into(),
            address: Some("198.51.100.2:443".into()),
            h1,
            h2,
            h3,
            alt_svc: None,
            notes: vec!["no QUIC answer within 3s".into()],
            h3_features: None,
        }
    }

    #[test]
    fn a_protocol_not_offered_is_refused_naming_the_origin_and_unknown_is_not_false() {
        let nginx = offer(Some(true), Some(true), Some(false));
        assert_eq!(nginx.refusal(Proto::H2), None);
        assert_eq!(nginx.refusal(Proto::Auto), None);
        let refused = nginx.refusal(Proto::H3).unwrap();
        assert!(
            refused.starts_with("https://www.site.test:443 does not offer h3: it offers h1, h2"),
            "{refused}"
        );
        let unknown = offer(None, None, None);
        assert_eq!(unknown.offers(Proto::Auto), None);
        assert!(unknown
            .refusal(Proto::H1)
            .unwrap()
            .contains("could not be checked"));
        assert_eq!(unknown.offered(), "none");
    }

    #[test]
    fn what_the_probe_found_reads_unknown_as_a_question_mark_not_as_no() {
        let mut features = H3Features {
            zero_rtt: Some(false),
            qpack_max_table_capacity: Some(0),
            ..H3Features::default()
        };
        assert_eq!(
            features.describe(),
            "server (no header), 0-RTT no, QPACK dynamic table none, survives a new client \
             port ?, first round trip ?, after one loss ?"
        );
        features.first_round_trip_bytes = Some(14_160);
        features.qpack_max_table_capacity = Some(4096);
        assert!(features.describe().ends_with("QPACK dynamic table 4096 B, survives a new client port ?, first round trip 14.2 KB (~12 packets), after one loss ?"), "{}", features.describe());
    }

    fn windows(before_bytes: u64, after_bytes: u64) -> LossWindows {
        LossWindows {
            before_bytes,
            after_bytes,
        }
    }

    #[test]
    fn a_cut_reads_as_the_family_whose_beta_it_is() {
        use CongestionFamily::*;
        let family = |before, after| CongestionFamily::of_ratio(windows(before, after).ratio()?);
        assert_eq!(family(100_000, 48_000), Some(Reno));
        assert_eq!(family(100_000, 71_000), Some(Cubic));
        assert_eq!(family(100_000, 64_000), None);
        assert_eq!(family(100_000, 100_000), None);
        assert_eq!(family(100_000, 115_000), Some(Bbr));
        assert_eq!(family(100_000, 190_000), Some(Bbr));
        assert_eq!(family(0, 0), None);
    }

    #[test]
    fn the_family_is_read_from_the_median_windows_of_at_least_two_tries() {
        let mut features = H3Features {
            loss_windows: vec![
                windows(88_808, 78_408),
                windows(103_552, 57_696),
                windows(85_968, 62_276),
            ],
            ..H3Features::default()
        };
        // Alone, the first try reads 0.88, near CUBIC's top, and the
        // second 0.56, Reno-like; the medians, 62,276 over 88,808, 0.70.
        assert_eq!(features.congestion_family(), Some(CongestionFamily::Cubic));
        assert_eq!(features.loss_response(), "CUBIC-like (x0.70)");
        features.loss_windows.truncate(1);
        assert_eq!(features.congestion_family(), None);
        assert_eq!(features.loss_response(), "?");
    }
}
