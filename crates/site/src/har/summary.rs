//! What an import says it did: the page, the recorded figures, what is
//! replayed, repeated, sent with a body, off its recorded size or skipped.

use std::fmt;

use crate::replay::{RecordedResponse, Replay};

/// What an import wrote.
#[derive(Debug)]
pub struct ImportSummary {
    /// The manifest written.
    pub replay: Replay,
    /// The page imported, when the HAR has several.
    pub page_note: Option<String>,
    /// Headers that could not be sent as recorded, by entry.
    pub dropped_headers: Vec<String>,
    /// Responses whose encoding h3lab cannot produce, sent decoded.
    pub decoded: Vec<String>,
    /// Requests other than GET whose initiator the HAR did not name, each
    /// given the last script to arrive before it started.
    pub inferred_initiators: usize,
}

impl fmt::Display for ImportSummary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let replay = &self.replay;
        writeln!(f, "page: {}", replay.page)?;
        writeln!(f, "from: {}", replay.source)?;
        let recorded = &replay.recorded;
        let ms = |v: Option<f64>| v.map_or("unknown".to_string(), |v| format!("{v:.0} ms"));
        writeln!(
            f,
            "recorded: load event {}, DOMContentLoaded {}, document over {}",
            ms(recorded.on_load_ms),
            ms(recorded.on_content_load_ms),
            recorded.protocol.as_deref().unwrap_or("unknown")
        )?;
        if let Some(note) = &self.page_note {
            writeln!(f, "note: {note}")?;
        }
        if let Some(upgraded) = &replay.upgraded {
            writeln!(
                f,
                "upgraded: {} entries captured over http:// are replayed over https ({}); {} http:// URLs in bodies and headers rewritten, {} redirects to https dropped",
                upgraded.entries,
                upgraded.hosts.join(", "),
                upgraded.urls_rewritten,
                upgraded.redirects_dropped
            )?;
        }
        self.responses(f)?;
        self.origins_and_sizes(f)?;
        for line in &self.decoded {
            writeln!(f, "sent decoded (an encoding h3lab cannot produce): {line}")?;
        }
        for line in &self.dropped_headers {
            writeln!(f, "header dropped (not valid HTTP): {line}")?;
        }
        writeln!(f, "skipped: {}", replay.skipped.len())?;
        for skipped in &replay.skipped {
            writeln!(
                f,
                "  entry {}: {}: {}",
                skipped.entry, skipped.reason, skipped.url
            )?;
        }
        Ok(())
    }
}

impl ImportSummary {
    /// What is replayed: bodies, responses outside the load, requests
    /// other than GET, repeats.
    fn responses(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let replay = &self.replay;
        let bytes: u64 = replay.responses.iter().map(|r| r.body_bytes).sum();
        let synthesized = replay.responses.iter().filter(|r| r.synthesized).count();
        writeln!(
            f,
            "responses: {} ({} bytes of bodies on the wire; {synthesized} filler of the recorded size, the HAR holding no body)",
            replay.responses.len(),
            bytes
        )?;
        let outside: Vec<_> = (replay.responses.iter())
            .filter_map(|r| Some((r.outside_load?, r)))
            .collect();
        if !outside.is_empty() {
            writeln!(
                f,
                "outside the page load: {} (replayed, but no resource of the load; a load does not wait for them)",
                outside.len()
            )?;
            for (why, r) in outside {
                writeln!(f, "  entry {}: {why}: {}", r.entry, r.url)?;
            }
        }
        let methods = replay.other_methods();
        if !methods.is_empty() {
            let counts: Vec<String> = (methods.iter())
                .map(|(method, count)| format!("{method} {count}"))
                .collect();
            let bodies = (replay.responses.iter())
                .filter_map(|r| r.request_body.as_ref())
                .filter(|body| body.text.is_none())
                .count();
            writeln!(
                f,
                "requests other than GET: {} (sent with their recorded method and body; {bodies} bodies filler of the recorded size, the HAR holding no text)",
                counts.join(", ")
            )?;
            if self.inferred_initiators > 0 {
                writeln!(
                    f,
                    "  {} of them without an initiator in the HAR: each is sent after the last script to arrive before it started",
                    self.inferred_initiators
                )?;
            }
        }
        let repeats = replay.responses.iter().filter(|r| r.repeat > 0).count();
        if repeats > 0 {
            let urls = (replay.responses.iter()).filter(|r| r.repeat == 1).count();
            writeln!(
                f,
                "repeated requests: {urls} URLs asked for more than once, {repeats} later responses, replayed in recorded order (a request beyond them gets the last)"
            )?;
        }
        Ok(())
    }

    /// Where it is served from, and which bodies are off their recorded
    /// size.
    fn origins_and_sizes(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let replay = &self.replay;
        writeln!(f, "origins: {}", replay.origins.len())?;
        for origin in &replay.origins {
            let count = replay
                .responses
                .iter()
                .filter(|r| r.host == origin.host)
                .count();
            writeln!(f, "  {} ({count} responses)", origin.origin)?;
        }
        let off: Vec<_> = replay.responses.iter().filter(|r| off_size(r)).collect();
        if !off.is_empty() {
            writeln!(
                f,
                "bodies more than 5 % off their recorded size: {}",
                off.len()
            )?;
            for r in off {
                let recorded = r.recorded_body_bytes.unwrap_or_default();
                writeln!(
                    f,
                    "  entry {}: {} B, recorded {recorded} B: {}",
                    r.entry, r.body_bytes, r.url
                )?;
            }
        }
        Ok(())
    }
}

/// Whether a replayed body's size is more than 5 % from the recorded one.
pub fn off_size(response: &RecordedResponse) -> bool {
    response.recorded_body_bytes.is_some_and(|recorded| {
        let actual = response.body_bytes as f64;
        (actual - recorded as f64).abs() > 0.05 * recorded as f64
    })
}
