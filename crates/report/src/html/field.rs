//! The "Field run" section: where the run measured from and what, each
//! origin's offer against what each load used, and the real path's drift
//! beside the results.

use std::collections::BTreeMap;

use h3lab_results::bench::{FieldRun, Results};
use maud::{html, Markup};

use super::protocol_badge;
use crate::field::{
    drift_rows, origin_of, place_of, used_rows, used_text, DriftPlot, DriftRow, UsedRow,
};
use crate::format::short;
use h3lab_results::offer::answer;

/// The whole section; nothing for a lab run.
pub(super) fn field_section(
    results: &Results,
    plots: &[DriftPlot],
    colours: &BTreeMap<String, String>,
) -> Markup {
    let Some(field) = &results.field else {
        return html! {};
    };
    let used = used_rows(results);
    let drift = drift_rows(results);
    html! {
        section #field {
            h2 { "Field run" }
            p.hint {
                "A deployed server h3lab did not start, measured over the real path from "
                strong { (place_of(field)) } ". The protocols took turns load by load, "
                (short(field.pause_s)) " s apart. A row on an emulated profile ran with the "
                "profile's conditions on top of the real path (" em { "real path + PROFILE" } "): its "
                "round trip is the real path's plus the profile's. The server's congestion "
                "controllers (its kernel's for TCP, its QUIC stack's for h3) are its own and "
                "unknown to h3lab; on a lossy path they can decide a verdict more than the "
                "protocol does (" code { "docs/field.md" } "). Run it again, to the same "
                "addresses, with " code { "h3lab bench results.json" } "."
            }
            (origins_table(field))
            p.hint { "Every cell went to the same address per host: " (field.pinned.join(", ")) "." }
            (used_table(field, &used, colours))
            (drift_table(&drift, plots, colours))
        }
    }
}

/// Which protocol each load's responses came over, per origin.
fn used_table(field: &FieldRun, used: &[UsedRow], colours: &BTreeMap<String, String>) -> Markup {
    html! {
        @if !used.is_empty() {
            h3 { "What each load used" }
            table.summary.field-used {
                thead { tr {
                    th { "page" } th { "profile" } th { "protocol" } th { "origin" }
                    th { "offered" } th { "responses over" }
                } }
                tbody {
                    @for row in used {
                        tr {
                            td { (row.workload) } td { (row.profile) }
                            td.nowrap { (protocol_badge(colours, &row.protocol)) }
                            td { code { (row.origin) } }
                            td { (offered(field, &row.origin)) }
                            td { (used_text(&row.used)) }
                        }
                    }
                }
            }
        }
    }
}

/// The round trip the cells measured on the real path, per protocol.
fn drift_table(
    drift: &[DriftRow],
    plots: &[DriftPlot],
    colours: &BTreeMap<String, String>,
) -> Markup {
    html! {
        @if !drift.is_empty() {
            h3 { "The real path's drift" }
            p.hint {
                "The round trip each cell's connections measured just after their handshakes "
                "(the kernel's smoothed RTT for TCP, QUIC's estimate), beside the round trip "
                "the profile adds. A difference between protocols is still called only outside "
                "its interval; a drift that moves one protocol's loads more than another's "
                "shows here first."
            }
            table.summary.field-drift {
                thead { tr {
                    th { "profile" } th { "protocol" } th.num { "added by the profile, ms" }
                    th.num { "cells" } th.num { "median ms" } th.num { "min ms" } th.num { "max ms" }
                } }
                tbody {
                    @for row in drift {
                        tr {
                            td { (row.profile) }
                            td.nowrap { (protocol_badge(colours, &row.protocol)) }
                            td.num { (short(row.added_ms)) }
                            td.num { (row.n) }
                            td.num.strong { (short(row.median_ms)) }
                            td.num { (short(row.min_ms)) }
                            td.num { (short(row.max_ms)) }
                        }
                    }
                }
            }
            div.plots {
                @for plot in plots { div.plot id=(plot.id) {} }
            }
        }
    }
}

fn origins_table(field: &FieldRun) -> Markup {
    html! {
        table.summary.field-origins {
            thead { tr {
                th { "origin" } th { "address" } th { "h1" } th { "h2" } th { "h3" }
                th { "Alt-Svc" } th { "notes" }
            } }
            tbody {
                @for origin in &field.origins {
                    tr {
                        td { code { (origin.origin) } }
                        td { (origin.address.as_deref().unwrap_or("unresolved")) }
                        td { (answer(origin.h1)) }
                        td { (answer(origin.h2)) }
                        td { (answer(origin.h3)) }
                        td { code { (origin.alt_svc.as_deref().unwrap_or("none")) } }
                        td.small { (origin.notes.join("; ")) }
                    }
                }
            }
        }
    }
}

/// The protocols the offer check found at the origin of `url`.
fn offered(field: &FieldRun, origin: &str) -> String {
    field
        .origins
        .iter()
        .find(|o| o.origin == origin_of(origin))
        .map_or("not checked".to_string(), |o| o.offered())
}
