//! The words every h3lab crate shares, each defined once, with the same
//! spelling in suites, JSON, command lines and reports.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// A name that is not one of a vocabulary's words; its message lists them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownName(String);

impl fmt::Display for UnknownName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UnknownName {}

/// Implements `name()`, `Display`, `FromStr` and serde as the word.
macro_rules! words {
    ($type:ident, $what:literal, $($variant:ident = $word:literal),+ $(,)?) => {
        impl $type {
            /// Every word, in order.
            pub const ALL: &'static [$type] = &[$($type::$variant),+];

            /// The word as written in suites, JSON and on command lines.
            pub fn name(self) -> &'static str {
                match self {
                    $($type::$variant => $word),+
                }
            }
        }

        impl fmt::Display for $type {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.name())
            }
        }

        impl FromStr for $type {
            type Err = UnknownName;

            fn from_str(text: &str) -> Result<$type, UnknownName> {
                $type::ALL
                    .iter()
                    .copied()
                    .find(|word| word.name() == text)
                    .ok_or_else(|| {
                        let words: Vec<&str> = $type::ALL.iter().map(|w| w.name()).collect();
                        let (last, rest) = words.split_last().expect("a vocabulary has words");
                        UnknownName(format!(
                            "unknown {} `{text}`: use {} or {last}",
                            $what,
                            rest.join(", ")
                        ))
                    })
            }
        }

        impl Serialize for $type {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(self.name())
            }
        }

        impl<'de> Deserialize<'de> for $type {
            fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<$type, D::Error> {
                let text = String::deserialize(deserializer)?;
                text.parse().map_err(serde::de::Error::custom)
            }
        }

        #[cfg(feature = "clap")]
        impl clap::ValueEnum for $type {
            fn value_variants<'a>() -> &'a [$type] {
                $type::ALL
            }

            fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
                Some(clap::builder::PossibleValue::new(self.name()))
            }
        }
    };
}

/// An HTTP version under test.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Proto {
    /// HTTP/1.1 over TCP, TLS or cleartext.
    H1,
    /// HTTP/2 over TLS on TCP.
    H2,
    /// HTTP/3 over QUIC.
    H3,
    /// Discovery as browsers do it: h2 until the origin's `Alt-Svc`
    /// advertises h3, then QUIC raced against TCP (h3lab-client's
    /// `alt_svc`). Each request still goes over h2 or h3.
    Auto,
}

words!(
    Proto,
    "protocol",
    H1 = "h1",
    H2 = "h2",
    H3 = "h3",
    Auto = "auto"
);

impl Proto {
    /// The ALPN token offered in the TLS handshake.
    pub fn alpn(self) -> &'static [u8] {
        self.alpn_name().as_bytes()
    }

    /// The ALPN token as text: how browsers (DevTools' `protocol`) and
    /// HAR name the protocol a response came over. `auto` starts on h2's.
    pub fn alpn_name(self) -> &'static str {
        match self {
            Proto::H1 => "http/1.1",
            Proto::H2 | Proto::Auto => "h2",
            Proto::H3 => "h3",
        }
    }
}

/// What loads a page: h3lab's own browser-like loader, or real Chromium.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Loader {
    /// The built-in loader: no browser, a browser's network behaviour.
    #[default]
    Builtin,
    /// Headless Chromium driven over the DevTools protocol.
    Chromium,
    /// Headless Firefox driven over WebDriver BiDi.
    Firefox,
}

words!(
    Loader,
    "page loader",
    Builtin = "builtin",
    Chromium = "chromium",
    Firefox = "firefox"
);

/// Which request headers a load sends beside those its protocol needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum HeaderSet {
    /// Only what the load needs (`h3lab load`'s own and any `-H`).
    #[default]
    Minimal,
    /// A browser's: Chromium's recorded set with a 1 kB cookie, and ids
    /// that change per request (`h3lab load --browser-headers`).
    Browser,
}

words!(
    HeaderSet,
    "header set",
    Minimal = "minimal",
    Browser = "browser"
);

/// What a cell cost, as a published figure may give it instead of the
/// workload's own figure (`measure` on `[[published]]`), each taken per
/// repetition from `cells[].wire`, `cells[].header_blocks` or `cells[].cpu`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum CostMeasure {
    /// Bytes of a request's header block, after a connection's first.
    RequestHeaderBytes,
    /// IP bytes both ways per request beyond the response body.
    OverheadPerRequest,
    /// IP bytes both ways per MB (10^6 B) of response bodies.
    WireBytesPerMb,
    /// Bytes the link dropped, which were sent again, per MB of bodies.
    ResentPerMb,
    /// The server's CPU microseconds per request (measured interval).
    ServerCpuPerRequest,
}

words!(
    CostMeasure,
    "cost measure",
    RequestHeaderBytes = "request_header_bytes",
    OverheadPerRequest = "overhead_per_request",
    WireBytesPerMb = "wire_bytes_per_mb",
    ResentPerMb = "resent_per_mb",
    ServerCpuPerRequest = "server_cpu_per_request",
);

impl CostMeasure {
    /// The unit our figure is given in.
    pub fn unit(self) -> &'static str {
        match self {
            CostMeasure::RequestHeaderBytes | CostMeasure::OverheadPerRequest => "B/request",
            CostMeasure::WireBytesPerMb | CostMeasure::ResentPerMb => "B/MB",
            CostMeasure::ServerCpuPerRequest => "us/request",
        }
    }
}

/// Whether a page load starts from nothing or reuses an earlier visit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Visit {
    /// New connections (and, for Chromium, a new browser and profile).
    #[default]
    Cold,
    /// Resumed TLS sessions, with 0-RTT where the protocol has it.
    Warm,
    /// Under the `auto` protocol, a returning browser: new connections
    /// and TLS sessions, but the `Alt-Svc` its first visit (not measured)
    /// learned is remembered. `Cold` is then the first visit.
    Repeat,
}

words!(
    Visit,
    "visit",
    Cold = "cold",
    Warm = "warm",
    Repeat = "repeat"
);

/// What a page's resource is, as the loader discovered it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ResourceKind {
    /// The page's HTML.
    Document,
    /// A stylesheet (`<link rel=stylesheet>`, `@import`).
    Stylesheet,
    /// A script (`<script src>`, or loaded by a script).
    Script,
    /// A web font (`@font-face` `src: url()`).
    Font,
    /// An image (`<img>`, a CSS `url()` background).
    Image,
    /// Anything else.
    Other,
}

words!(
    ResourceKind,
    "resource kind",
    Document = "document",
    Stylesheet = "stylesheet",
    Script = "script",
    Font = "font",
    Image = "image",
    Other = "other",
);

/// The congestion controller HTTP/3's QUIC uses (quinn's). TCP's is the
/// kernel's, so `Auto` picks the family of the kernel's TCP controller and
/// both protocols are compared under the same congestion control.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum QuicCongestion {
    /// The family of the kernel's TCP controller, resolved where the server runs.
    Auto,
    /// quinn's default.
    #[default]
    Cubic,
    /// NewReno.
    NewReno,
    /// h3lab's own BBR (`crates/congestion`), which replaced quinn's.
    Bbr,
}

words!(
    QuicCongestion,
    "QUIC congestion controller",
    Auto = "auto",
    Cubic = "cubic",
    NewReno = "newreno",
    Bbr = "bbr",
);

impl QuicCongestion {
    /// The controller of the same family as the Linux TCP controller `tcp`
    /// (`bbr`, `reno`, `cubic`...); Cubic when quinn has no match.
    pub fn matching_tcp(tcp: &str) -> QuicCongestion {
        match tcp.trim() {
            name if name.starts_with("bbr") => QuicCongestion::Bbr,
            "reno" => QuicCongestion::NewReno,
            _ => QuicCongestion::Cubic,
        }
    }

    /// The controller this choice stands for where the kernel's TCP
    /// controller is `tcp`: `Auto` becomes its family, others stay.
    pub fn resolved(self, tcp: &str) -> QuicCongestion {
        match self {
            QuicCongestion::Auto => QuicCongestion::matching_tcp(tcp),
            chosen => chosen,
        }
    }
}

/// A TCP congestion controller the server sets per connection, by the
/// kernel's name for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TcpCongestion {
    /// CUBIC, Linux's usual default.
    Cubic,
    /// BBR (the `tcp_bbr` module).
    Bbr,
    /// NewReno.
    Reno,
}

words!(
    TcpCongestion,
    "TCP congestion controller",
    Cubic = "cubic",
    Bbr = "bbr",
    Reno = "reno",
);

/// How a connection whose first byte is timed starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TtfbMode {
    /// A full handshake: no session to resume.
    Cold,
    /// TLS 1.3 / QUIC session resumption from a ticket a priming connection left.
    Resumed,
    /// The request in 0-RTT early data (h3 only).
    ZeroRtt,
}

words!(
    TtfbMode,
    "handshake mode",
    Cold = "cold",
    Resumed = "resumed",
    ZeroRtt = "0rtt",
);

impl TtfbMode {
    /// Whether `proto` can start a connection this way.
    pub fn applies_to(self, proto: Proto) -> bool {
        // A ttfb sample times one protocol's handshake: `auto` has none.
        proto != Proto::Auto && (self != TtfbMode::ZeroRtt || proto == Proto::H3)
    }
}

/// What a bench workload measures: the `kind` of its suite table and of
/// its cells' records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum WorkloadKind {
    /// Requests per second (or a latency quantile) at a concurrency.
    Rps,
    /// Time to download bodies in parallel.
    Download,
    /// Time to first byte on new connections.
    Ttfb,
    /// Page loads of a site.
    Page,
    /// The HTTP/3 conformance suite (`h3lab probe conformance`).
    Conformance,
}

words!(
    WorkloadKind,
    "workload kind",
    Rps = "rps",
    Download = "download",
    Ttfb = "ttfb",
    Page = "page",
    Conformance = "conformance",
);

/// Why a request got no good response.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ErrorKind {
    /// TCP connect refused or unreachable, or no QUIC answer.
    Connect,
    /// The TLS or QUIC crypto handshake failed (e.g. an untrusted certificate).
    Tls,
    /// The peer reset or closed the connection or stream.
    Reset,
    /// A connect or request deadline passed.
    Timeout,
    /// The peer spoke the protocol wrongly (or no request could be built).
    Protocol,
    /// A response with status 400 or above.
    BadStatus,
}

words!(
    ErrorKind,
    "error kind",
    Connect = "connect",
    Tls = "tls",
    Reset = "reset",
    Timeout = "timeout",
    Protocol = "protocol",
    BadStatus = "bad_status",
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_round_trip_through_text_and_json() {
        for proto in Proto::ALL {
            assert_eq!(proto.name().parse::<Proto>(), Ok(*proto));
        }
        assert_eq!(
            serde_json::to_string(&TtfbMode::ZeroRtt).unwrap(),
            "\"0rtt\""
        );
        let cc: QuicCongestion = serde_json::from_str("\"newreno\"").unwrap();
        assert_eq!(cc, QuicCongestion::NewReno);
    }

    #[test]
    fn an_unknown_word_lists_the_known_ones() {
        let err = "h4".parse::<Proto>().unwrap_err().to_string();
        assert_eq!(err, "unknown protocol `h4`: use h1, h2, h3 or auto");
        let err = serde_json::from_str::<TtfbMode>("\"warm\"")
            .unwrap_err()
            .to_string();
        assert!(err.contains("use cold, resumed or 0rtt"), "{err}");
    }

    #[test]
    fn quic_controller_follows_the_tcp_family() {
        assert_eq!(QuicCongestion::matching_tcp("bbr\n"), QuicCongestion::Bbr);
        assert_eq!(QuicCongestion::matching_tcp("bbr2"), QuicCongestion::Bbr);
        assert_eq!(
            QuicCongestion::matching_tcp("reno"),
            QuicCongestion::NewReno
        );
        assert_eq!(QuicCongestion::matching_tcp("cubic"), QuicCongestion::Cubic);
        assert_eq!(QuicCongestion::matching_tcp("vegas"), QuicCongestion::Cubic);
    }

    #[test]
    fn zero_rtt_is_for_h3_only() {
        assert!(TtfbMode::ZeroRtt.applies_to(Proto::H3));
        assert!(!TtfbMode::ZeroRtt.applies_to(Proto::H2));
        assert!(TtfbMode::Resumed.applies_to(Proto::H1));
    }
}
