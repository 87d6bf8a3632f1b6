//! A command line built from typed values, flag by flag: the way back from
//! a command's parsed flags ([`CommandFlags`], which `h3lab_load::cli::LoadArgs`
//! and its kin implement) to the arguments that parse to them; and, with
//! the `clap` feature, the way there (`parse`), as the binary parses them.

use std::ffi::OsString;
use std::path::Path;
use std::time::Duration;

/// A command's typed flags: the way back to its arguments (`to_args`)
/// and, with the `clap` feature, the way there (`parse_flags`).
pub trait CommandFlags: Sized {
    /// The command the flags follow, e.g. `h3lab load`.
    const COMMAND: &'static str;

    /// The flags, after [`Self::COMMAND`], that parse back to `self`.
    fn to_args(&self) -> Vec<OsString>;

    /// The arguments after the binary's name: the command's words (`load`,
    /// `probe ttfb`), then [`Self::to_args`].
    fn command_args(&self) -> Vec<OsString> {
        let words = Self::COMMAND.split(' ').skip(1).map(OsString::from);
        words.chain(self.to_args()).collect()
    }

    /// Parses the flags that follow [`Self::COMMAND`], as the binary
    /// does; the error is clap's, without its `error:` prefix.
    #[cfg(feature = "clap")]
    fn parse_flags(
        flags: impl IntoIterator<Item = impl Into<OsString> + Clone>,
    ) -> anyhow::Result<Self>
    where
        Self: clap::Args + clap::FromArgMatches,
    {
        parse(Self::COMMAND, flags)
    }

    /// `self` through its arguments and back, which a test compares with
    /// `self`.
    #[cfg(feature = "clap")]
    fn round_trip(&self) -> anyhow::Result<Self>
    where
        Self: clap::Args + clap::FromArgMatches,
    {
        let args = self.to_args();
        Self::parse_flags(args.clone())
            .map_err(|err| anyhow::anyhow!("{args:?} do not parse back: {err}"))
    }
}

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

    /// Arguments that another type wrote, e.g. linkem's path flags.
    pub fn extend(&mut self, args: impl IntoIterator<Item = OsString>) {
        self.0.extend(args);
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

/// A `clap::ValueEnum` value's word on the command line (`in-order`).
#[cfg(feature = "clap")]
pub fn value_word(value: impl clap::ValueEnum) -> String {
    let value = value.to_possible_value().expect("no value is skipped");
    value.get_name().to_string()
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

    struct Probe;

    impl CommandFlags for Probe {
        const COMMAND: &'static str = "h3lab probe ttfb";

        fn to_args(&self) -> Vec<OsString> {
            vec!["--quiet".into()]
        }
    }

    #[test]
    fn the_command_words_come_before_the_flags() {
        assert_eq!(Probe.command_args(), ["probe", "ttfb", "--quiet"]);
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
