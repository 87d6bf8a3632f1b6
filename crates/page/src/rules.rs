//! What a real browser's load of a page must be to count, whichever the
//! browser: the hosts it may reach, the errors the captured page had, the
//! problems that fail a load and those a browser shows the page without.

use h3lab_results::page::{blocks_the_page, FailedResource};
use h3lab_results::{Proto, ResourceKind};

/// What a load may reach and what it may find missing, beyond the page's
/// own host.
#[derive(Debug, Default)]
pub struct PageRules {
    /// Hosts besides the page's that requests may go to: a replay's
    /// origins, mapped to their addresses or left to DNS.
    pub reachable_hosts: Vec<String>,
    /// URLs the captured page recorded with an error status.
    pub recorded_errors: Vec<String>,
}

impl PageRules {
    pub(crate) fn reaches(&self, host: Option<String>) -> bool {
        host.is_some_and(|host| {
            self.reachable_hosts
                .iter()
                .any(|m| m.eq_ignore_ascii_case(&host))
        })
    }

    pub(crate) fn recorded_error(&self, url: &str) -> bool {
        self.recorded_errors.iter().any(|recorded| recorded == url)
    }
}

/// A reason the load fails, about one resource.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Problem {
    pub(crate) url: String,
    pub(crate) reason: Reason,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Reason {
    /// Came over `protocol`, not one of those asked for.
    Protocol { protocol: String, expected: String },
    /// Answered with an error status.
    Status(u64),
    /// The request failed, with why.
    Failed(String),
    /// Neither finished nor failed before the events ended.
    NeverFinished,
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.url, self.reason)
    }
}

impl std::fmt::Display for Reason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Reason::Protocol { protocol, expected } => {
                write!(f, "came over {protocol}, not {expected}")
            }
            Reason::Status(status) => write!(f, "answered status {status}"),
            Reason::Failed(why) => write!(f, "failed to load: {why}"),
            Reason::NeverFinished => write!(f, "never finished loading"),
        }
    }
}

/// The ALPN names a response may come over when `requested` is asked
/// for: `auto` lets discovery choose between h2 and h3.
pub(crate) fn allowed_protocols(requested: Proto) -> Vec<&'static str> {
    match requested {
        Proto::Auto => vec!["h2", "h3"],
        fixed => vec![fixed.alpn_name()],
    }
}

/// What is wrong with a response for `url` that came over `protocol`
/// (an ALPN name) with `status`: a protocol not `allowed`, an error
/// status the captured page did not record.
pub(crate) fn response_problems(
    allowed: &[&str],
    rules: &PageRules,
    url: &str,
    protocol: Option<&str>,
    status: Option<u64>,
) -> Vec<Problem> {
    let mut problems = Vec::new();
    let protocol = protocol.unwrap_or("unknown");
    if !allowed.contains(&protocol) {
        let reason = Reason::Protocol {
            protocol: protocol.to_string(),
            expected: allowed.join(" or "),
        };
        problems.push(Problem {
            url: url.to_string(),
            reason,
        });
    }
    let status = status.unwrap_or(0);
    if status >= 400 && !rules.recorded_error(url) {
        problems.push(Problem {
            url: url.to_string(),
            reason: Reason::Status(status),
        });
    }
    problems
}

/// The problems the page cannot be shown with (a response over another
/// protocol, a failed document or render-blocking resource), as messages,
/// and the resources it went on without, as a browser does. `resource`
/// gives the method, kind and render-blocking of a URL the load requested.
pub(crate) fn sort_problems(
    problems: Vec<Problem>,
    resource: impl Fn(&str) -> Option<(String, ResourceKind, bool)>,
) -> (Vec<String>, Vec<FailedResource>) {
    let mut fatal = Vec::new();
    let mut failed = Vec::new();
    for problem in problems {
        let without = resource(&problem.url).filter(|(_, kind, render_blocking)| {
            !blocks_the_page(*kind, *render_blocking)
                && !matches!(problem.reason, Reason::Protocol { .. })
        });
        match without {
            Some((method, _, _)) => failed.push(FailedResource {
                method,
                url: problem.url.clone(),
                why: problem.reason.to_string(),
            }),
            None => fatal.push(problem.to_string()),
        }
    }
    (fatal, failed)
}

/// The host of `url`, which decides whether the page's host serves it.
pub(crate) fn host_of(url: &str) -> Option<String> {
    url::Url::parse(url).ok()?.host_str().map(str::to_string)
}

/// A problem for each request (URL, whether it finished) that neither
/// finished nor has one among `problems` already.
pub(crate) fn unfinished<'a>(
    requests: impl Iterator<Item = (&'a str, bool)>,
    problems: &[Problem],
) -> Vec<Problem> {
    (requests.filter(|(url, finished)| !finished && !problems.iter().any(|p| p.url == *url)))
        .map(|(url, _)| Problem {
            url: url.to_string(),
            reason: Reason::NeverFinished,
        })
        .collect()
}
