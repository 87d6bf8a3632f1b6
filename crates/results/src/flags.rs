//! A command line built from typed values, flag by flag: the way back from
//! a command's parsed flags (`h3lab_load::cli::LoadArgs::to_args` and its
//! kin) to the arguments that parse to them; and, with the `clap` feature,
//! the way there (`parse`), as the binary parses them.

use std::ffi::OsString;
use std::path::Path;
use std::time::Duration;

/// The arguments of one command, in the order added.
#[derive(Debug, Default)]
pub struct Flags(Vec<OsString>);

impl Flags {
    /// `flag=value`, one argument, so that a value starting with `-` is
    /// never read as a flag.
    pub fn value(&mut self, flag: &str, value: impl ToString) {
        self.0.push(format!("{flag}={}", value.to_string()).into());
    }

    /// `flag=value` when there is a value.
    pub fn value_opt(&mut self, flag: &str, value: Option<impl ToString>) {
        if let Some(value) = value {
            self.value(flag, value);
        }
    }

    /// `flag=duration`, as humantime reads it back exactly (`1s 500ms`).
    pub fn duration(&mut self, flag: &str, value: Duration) {
        self.value(flag, humantime::format_duration(value));
    }

    /// `flag=duration` when there is one.
    pub fn duration_opt(&mut self, flag: &str, value: Option<Duration>) {
        if let Some(value) = value {
            self.duration(flag, value);
        }
    }

    /// `flag=path` when there is a path, which need not be UTF-8.
    pub fn path_opt(&mut self, flag: &str, path: Option<&Path>) {
        if let Some(path) = path {
            let mut arg = OsString::from(format!("{flag}="));
            arg.push(path);
            self.0.push(arg);
        }
    }

    /// `flag=value` for each value.
    pub fn each(&mut self, flag: &str, values: &[impl std::fmt::Display]) {
        for value in values {
            self.value(flag, value);
        }
    }

    /// `flag` when it is on.
    pub fn switch(&mut self, flag: &str, on: bool) {
        if on {
            self.0.push(flag.into());
        }
    }

    /// The arguments, with `positional` last after `--`, so that it is
    /// never read as a flag either.
    pub fn finish(
        mut self,
        positional: impl IntoIterator<Item = impl Into<OsString>>,
    ) -> Vec<OsString> {
        self.0.push("--".into());
        self.0.extend(positional.into_iter().map(Into::into));
        self.0
    }
}

/// Parses the flags that follow `command` (e.g. `h3lab load`) into its
/// typed flags, as the binary does; the error is clap's, without its
/// `error:` prefix.
#[cfg(feature = "clap")]
pub fn parse<A: clap::Args + clap::FromArgMatches>(
    command: &'static str,
    flags: impl IntoIterator<Item = impl Into<OsString> + Clone>,
) -> anyhow::Result<A> {
    let line = A::augment_args(clap::Command::new(command).no_binary_name(true));
    let parsed = line
        .try_get_matches_from(flags)
        .and_then(|matches| A::from_arg_matches(&matches));
    parsed.map_err(|err| {
        let text = err.render().to_string();
        anyhow::anyhow!("{}", text.trim_start_matches("error: ").trim_end())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_back_exactly() {
        let cases = [
            Duration::ZERO,
            Duration::from_millis(1_500),
            Duration::from_secs(90),
            Duration::from_nanos(2_000_000_123),
            Duration::from_secs(400 * 86_400 + 1),
        ];
        for value in cases {
            let mut flags = Flags::default();
            flags.duration("-z", value);
            let text = flags.0[0].to_str().unwrap().strip_prefix("-z=").unwrap();
            assert_eq!(humantime::parse_duration(text).unwrap(), value, "{text}");
        }
    }

    #[test]
    fn values_are_joined_to_their_flags_and_the_positional_comes_last() {
        let mut flags = Flags::default();
        flags.value("--body", "-x");
        flags.switch("--quiet", true);
        flags.switch("--insecure", false);
        let args = flags.finish(["-https://a/"]);
        assert_eq!(args, ["--body=-x", "--quiet", "--", "-https://a/"]);
    }
}
