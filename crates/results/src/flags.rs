//! A command's typed flags and the command line that parses to them. The
//! way there is clap's (`parse`, as the binary parses); the way back
//! ([`CommandFlags::to_args`]) is derived from the same clap definitions,
//! each flag spelt as clap spells it and given the text its field
//! serialises to, so that no flag is written down twice.

use std::ffi::OsString;

use anyhow::Context;
use serde::Serialize;

mod text;

use text::Given;

/// A command's typed flags: the way back to its arguments (`to_args`)
/// and the way there (`parse_flags`). Each field serialises to the text
/// its flag's parser reads back (a `Duration` through [`duration`], a
/// type of its own through its `Display`).
pub trait CommandFlags: clap::Args + clap::FromArgMatches + Serialize + Sized {
    /// The command the flags follow, e.g. `h3lab load`.
    const COMMAND: &'static str;

    /// The flags, after [`Self::COMMAND`], that parse back to `self`:
    /// each one that differs from clap's default, as `--flag=value` (one
    /// argument, so that a value starting with `-` is never read as a
    /// flag), then `--` and the positional arguments. Fails only for a
    /// path that is not UTF-8.
    fn to_args(&self) -> anyhow::Result<Vec<OsString>> {
        derive_args(self)
            .with_context(|| format!("cannot pass on the flags of `{}`", Self::COMMAND))
    }

    /// The arguments after the binary's name: the command's words (`load`,
    /// `probe ttfb`), then [`Self::to_args`].
    fn command_args(&self) -> anyhow::Result<Vec<OsString>> {
        let words = Self::COMMAND.split(' ').skip(1).map(OsString::from);
        Ok(words.chain(self.to_args()?).collect())
    }

    /// Parses the flags that follow [`Self::COMMAND`], as the binary
    /// does; the error is clap's, without its `error:` prefix.
    fn parse_flags(
        flags: impl IntoIterator<Item = impl Into<OsString> + Clone>,
    ) -> anyhow::Result<Self> {
        parse(Self::COMMAND, flags)
    }

    /// `self` through its arguments and back, which a test compares with
    /// `self`.
    fn round_trip(&self) -> anyhow::Result<Self> {
        let args = self.to_args()?;
        Self::parse_flags(args.clone())
            .map_err(|err| anyhow::anyhow!("{args:?} do not parse back: {err}"))
    }
}

/// `flags` with `more` flags given after its own (`--flag=value`), each
/// overriding what `flags` had, as the command's own parser reads them.
pub fn overridden<A: CommandFlags>(
    flags: &A,
    more: impl IntoIterator<Item = OsString>,
) -> anyhow::Result<A> {
    let mut args = flags.to_args()?;
    let end = (args.iter().position(|arg| arg == "--")).unwrap_or(args.len());
    args.splice(end..end, more);
    let line = clap::Command::new(A::COMMAND)
        .no_binary_name(true)
        .args_override_self(true);
    let parsed = (A::augment_args(line).try_get_matches_from(args))
        .and_then(|matches| A::from_arg_matches(&matches));
    parsed.map_err(clap_error)
}

/// `flags`' arguments, walking `A`'s clap arguments in their order.
fn derive_args<A: clap::Args + clap::FromArgMatches + Serialize>(
    flags: &A,
) -> anyhow::Result<Vec<OsString>> {
    let mut fields = text::fields(flags)?;
    let command = A::augment_args(clap::Command::new("flags"));
    let mut positional = Vec::new();
    for arg in command.get_arguments().filter(|arg| arg.is_positional()) {
        if let Some(Given::Values(values)) = fields.remove(arg.get_id().as_str()) {
            positional.extend(values);
        }
    }
    let defaults = defaults::<A>(&positional);
    let mut args = Vec::new();
    for arg in command.get_arguments().filter(|arg| !arg.is_positional()) {
        let id = arg.get_id().as_str();
        let given = fields
            .remove(id)
            .with_context(|| format!("the flag `{id}` has no serialised field"))?;
        if defaults.as_ref().and_then(|defaults| defaults.get(id)) == Some(&given) {
            continue;
        }
        let flag = spelling(arg);
        match (given, arg.get_value_delimiter()) {
            (Given::Switch(on), _) => args.extend(on.then(|| OsString::from(&flag))),
            (Given::Values(values), Some(delimiter)) => {
                args.extend(joined(&flag, &values, delimiter))
            }
            (Given::Values(values), None) => {
                args.extend(values.iter().map(|value| with_value(&flag, value)))
            }
        }
    }
    args.push("--".into());
    args.extend(positional);
    Ok(args)
}

/// What each field of `A` is with every flag left out and these
/// positional arguments; `None` when they do not parse alone.
fn defaults<A: clap::Args + clap::FromArgMatches + Serialize>(
    positional: &[OsString],
) -> Option<std::collections::BTreeMap<String, Given>> {
    let line = std::iter::once(OsString::from("--")).chain(positional.iter().cloned());
    let defaults: A = parse("flags", line).ok()?;
    text::fields(&defaults).ok()
}

/// `--long`, or `-s` for a flag with a short name alone.
fn spelling(arg: &clap::Arg) -> String {
    match (arg.get_long(), arg.get_short()) {
        (Some(long), _) => format!("--{long}"),
        (None, Some(short)) => format!("-{short}"),
        (None, None) => unreachable!("a flag that is not positional has a name"),
    }
}

fn with_value(flag: &str, value: &OsString) -> OsString {
    let mut arg = OsString::from(format!("{flag}="));
    arg.push(value);
    arg
}

/// `--flag=a,b,c` for a list read with a delimiter; nothing for an empty one.
fn joined(flag: &str, values: &[OsString], delimiter: char) -> Option<OsString> {
    let mut list = OsString::new();
    for (index, value) in values.iter().enumerate() {
        if index > 0 {
            list.push(delimiter.to_string());
        }
        list.push(value);
    }
    (!values.is_empty()).then(|| with_value(flag, &list))
}

/// A `Duration` as humantime reads it back exactly (`1s 500ms`), for a
/// field's `#[serde(serialize_with = "...")]`.
pub fn duration<S: serde::Serializer>(
    value: &std::time::Duration,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    serializer.collect_str(&humantime::format_duration(*value))
}

/// [`duration`] for an optional one.
pub fn duration_opt<S: serde::Serializer>(
    value: &Option<std::time::Duration>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    match value {
        Some(value) => duration(value, serializer),
        None => serializer.serialize_none(),
    }
}

/// A value as its `Display` writes it, for a field whose type's parser
/// reads that back.
pub fn display<S: serde::Serializer>(
    value: &impl std::fmt::Display,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    serializer.collect_str(value)
}

/// [`display`] for an optional one.
pub fn display_opt<S: serde::Serializer, T: std::fmt::Display>(
    value: &Option<T>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    match value {
        Some(value) => display(value, serializer),
        None => serializer.serialize_none(),
    }
}

/// [`display`] for each of a list.
pub fn display_each<S: serde::Serializer, T: std::fmt::Display>(
    values: &[T],
    serializer: S,
) -> Result<S::Ok, S::Error> {
    serializer.collect_seq(values.iter().map(ToString::to_string))
}

/// A `clap::ValueEnum` value's word on the command line (`in-order`).
pub fn value_word(value: impl clap::ValueEnum) -> String {
    let value = value.to_possible_value().expect("no value is skipped");
    value.get_name().to_string()
}

/// [`value_word`], for a field's `#[serde(serialize_with = "...")]`.
pub fn word<S: serde::Serializer>(
    value: &impl clap::ValueEnum,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(&value_word(value.clone()))
}

/// The flag `id` of `A` as clap spells it (`--shard`), for a command line
/// written by hand.
pub fn flag<A: clap::Args>(id: &str) -> String {
    let command = A::augment_args(clap::Command::new("flags"));
    let arg = (command.get_arguments())
        .find(|arg| arg.get_id().as_str() == id)
        .unwrap_or_else(|| panic!("no flag `{id}`"));
    spelling(arg)
}

/// Parses the flags that follow `command` (e.g. `h3lab load`) into its
/// typed flags, as the binary does; the error is clap's, without its
/// `error:` prefix.
pub fn parse<A: clap::Args + clap::FromArgMatches>(
    command: &'static str,
    flags: impl IntoIterator<Item = impl Into<OsString> + Clone>,
) -> anyhow::Result<A> {
    let line = A::augment_args(clap::Command::new(command).no_binary_name(true));
    let parsed = line
        .try_get_matches_from(flags)
        .and_then(|matches| A::from_arg_matches(&matches));
    parsed.map_err(clap_error)
}

/// Clap's error, without its `error:` prefix.
fn clap_error(err: clap::Error) -> anyhow::Error {
    let text = err.render().to_string();
    anyhow::anyhow!("{}", text.trim_start_matches("error: ").trim_end())
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;
    use std::time::Duration;

    use super::*;

    /// Every kind of flag the commands have.
    #[derive(Debug, Clone, PartialEq, clap::Args, Serialize)]
    struct Example {
        /// Positional.
        #[arg(required = true)]
        urls: Vec<String>,
        #[arg(long)]
        quiet: bool,
        #[arg(short = 'n', long, default_value_t = 5)]
        loads: u32,
        #[arg(long, value_parser = humantime::parse_duration, default_value = "10s")]
        #[serde(serialize_with = "duration")]
        timeout: Duration,
        #[arg(long, value_parser = humantime::parse_duration)]
        #[serde(serialize_with = "duration_opt")]
        switch_at: Option<Duration>,
        #[arg(long, value_delimiter = ',', default_value = "h1,h2")]
        protos: Vec<crate::Proto>,
        #[arg(long = "header")]
        headers: Vec<String>,
        #[arg(long)]
        json: Option<PathBuf>,
        #[arg(long)]
        rate: Option<f64>,
        #[arg(short = 'x')]
        short_only: Option<String>,
        #[command(flatten)]
        #[serde(flatten)]
        inner: Inner,
    }

    #[derive(Debug, Clone, PartialEq, clap::Args, Serialize)]
    struct Inner {
        #[arg(long)]
        seed: Option<u64>,
    }

    impl CommandFlags for Example {
        const COMMAND: &'static str = "h3lab probe example";
    }

    fn example() -> Example {
        Example::parse_flags(["https://a/"]).unwrap()
    }

    #[test]
    fn flags_at_their_defaults_are_left_out_and_the_positional_comes_last() {
        let args = example().command_args().unwrap();
        assert_eq!(args, ["probe", "example", "--", "https://a/"]);
        assert_eq!(example().round_trip().unwrap(), example());
    }

    #[test]
    fn every_kind_of_flag_is_spelt_as_clap_defines_it_and_reads_back() {
        let changed = Example {
            urls: vec!["-https://a/".into(), "https://b/".into()],
            quiet: true,
            loads: 7,
            timeout: Duration::from_nanos(2_000_000_123),
            switch_at: Some(Duration::from_millis(1_500)),
            protos: vec![crate::Proto::H3, crate::Proto::Auto],
            headers: vec!["a: 1".into(), "-b: 2".into()],
            json: Some("/tmp/out put.json".into()),
            rate: Some(0.1 + 0.2),
            short_only: Some("-v".into()),
            inner: Inner { seed: Some(9) },
        };
        let args = changed.to_args().unwrap();
        assert_eq!(
            args,
            [
                "--quiet",
                "--loads=7",
                "--timeout=2s 123ns",
                "--switch-at=1s 500ms",
                "--protos=h3,auto",
                "--header=a: 1",
                "--header=-b: 2",
                "--json=/tmp/out put.json",
                "--rate=0.30000000000000004",
                "-x=-v",
                "--seed=9",
                "--",
                "-https://a/",
                "https://b/",
            ]
        );
        assert_eq!(changed.round_trip().unwrap(), changed);
    }

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
            let flags = Example {
                switch_at: Some(value),
                ..example()
            };
            assert_eq!(flags.round_trip().unwrap(), flags, "{value:?}");
        }
    }

    #[test]
    fn a_path_that_is_not_utf8_is_an_error_naming_the_command() {
        use std::os::unix::ffi::OsStringExt;
        let flags = Example {
            json: Some(OsString::from_vec(vec![b'a', 0xff]).into()),
            ..example()
        };
        let err = format!("{:#}", flags.to_args().unwrap_err());
        assert!(err.contains("`h3lab probe example`"), "{err}");
        assert!(err.contains("UTF-8"), "{err}");
    }

    #[test]
    fn a_flag_is_found_by_its_field() {
        assert_eq!(flag::<Example>("switch_at"), "--switch-at");
        assert_eq!(flag::<Example>("short_only"), "-x");
    }
}
