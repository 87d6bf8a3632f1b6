//! `cells[].client_report`: the client's own report of a repetition, read
//! by its `schema` into the type the client wrote it with.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::conformance::{ConformanceReport, CONFORMANCE_SCHEMA};
use crate::load::{LoadReport, LOAD_SCHEMA};
use crate::page::{PageReport, PAGE_SCHEMA};
use crate::ttfb::{TtfbReport, TTFB_SCHEMA};

/// The client's full report of one repetition.
#[derive(Debug, Clone)]
pub enum ClientReport {
    /// `h3lab load` (`h3lab.load/1`): rps and download cells.
    Load(Box<LoadReport>),
    /// `h3lab probe ttfb` (`h3lab.ttfb/2`).
    Ttfb(TtfbReport),
    /// `h3lab page` (`h3lab.page/1`), the median load kept.
    Page(PageReport),
    /// `h3lab probe conformance` (`h3lab.conformance/1`).
    Conformance(Box<ConformanceReport>),
    /// A report this version cannot read (another schema, or a shape an
    /// older h3lab wrote): why. What it held is unknown here, so it is
    /// written back as `null` rather than guessed at.
    Unreadable(String),
}

impl ClientReport {
    /// The load report, if this is one.
    pub fn load(&self) -> Option<&LoadReport> {
        match self {
            ClientReport::Load(report) => Some(report),
            _ => None,
        }
    }

    /// The ttfb probe's report, if this is one.
    pub fn ttfb(&self) -> Option<&TtfbReport> {
        match self {
            ClientReport::Ttfb(report) => Some(report),
            _ => None,
        }
    }

    /// The page report, if this is one.
    pub fn page(&self) -> Option<&PageReport> {
        match self {
            ClientReport::Page(report) => Some(report),
            _ => None,
        }
    }

    /// The conformance suite's report, if this is one.
    pub fn conformance(&self) -> Option<&ConformanceReport> {
        match self {
            ClientReport::Conformance(report) => Some(report),
            _ => None,
        }
    }

    /// Why the report could not be read, if it could not.
    pub fn unreadable(&self) -> Option<&str> {
        match self {
            ClientReport::Unreadable(why) => Some(why),
            _ => None,
        }
    }
}

impl From<LoadReport> for ClientReport {
    fn from(report: LoadReport) -> Self {
        ClientReport::Load(Box::new(report))
    }
}

impl From<TtfbReport> for ClientReport {
    fn from(report: TtfbReport) -> Self {
        ClientReport::Ttfb(report)
    }
}

impl From<PageReport> for ClientReport {
    fn from(report: PageReport) -> Self {
        ClientReport::Page(report)
    }
}

impl From<ConformanceReport> for ClientReport {
    fn from(report: ConformanceReport) -> Self {
        ClientReport::Conformance(Box::new(report))
    }
}

impl Serialize for ClientReport {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            ClientReport::Load(report) => report.serialize(serializer),
            ClientReport::Ttfb(report) => report.serialize(serializer),
            ClientReport::Page(report) => report.serialize(serializer),
            ClientReport::Conformance(report) => report.serialize(serializer),
            ClientReport::Unreadable(_) => serializer.serialize_none(),
        }
    }
}

impl<'de> Deserialize<'de> for ClientReport {
    /// Never fails on a report it cannot read: a results file loads whole,
    /// and the report says which client reports it could not read.
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        // The schema decides the type, so the report is read twice: once
        // for its schema, once as that type.
        let value = serde_json::Value::deserialize(deserializer)?;
        let Some(schema) = value.get("schema").and_then(|s| s.as_str()) else {
            return Ok(ClientReport::Unreadable(
                "the client report names no schema".to_string(),
            ));
        };
        let schema = schema.to_string();
        let read = match schema.as_str() {
            LOAD_SCHEMA => serde_json::from_value::<LoadReport>(value).map(ClientReport::from),
            TTFB_SCHEMA => serde_json::from_value::<TtfbReport>(value).map(ClientReport::from),
            PAGE_SCHEMA => serde_json::from_value::<PageReport>(value).map(ClientReport::from),
            CONFORMANCE_SCHEMA => {
                serde_json::from_value::<ConformanceReport>(value).map(ClientReport::from)
            }
            _ => {
                return Ok(ClientReport::Unreadable(format!(
                    "a {schema} client report, which this h3lab does not read (it reads \
                     {LOAD_SCHEMA}, {TTFB_SCHEMA}, {PAGE_SCHEMA} and {CONFORMANCE_SCHEMA})"
                )))
            }
        };
        Ok(read.unwrap_or_else(|err| {
            ClientReport::Unreadable(format!(
                "a {schema} client report in a shape this h3lab does not read ({err})"
            ))
        }))
    }
}
