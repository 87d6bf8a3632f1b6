//! A response's field section read as a head or as trailers, checked to
//! the rules HTTP/2 and HTTP/3 share: lowercase token names (RFC 9113
//! §8.2.1, RFC 9114 §4.2), no connection-specific field (RFC 9113 §8.2.2),
//! `:status` first and alone among pseudo-headers (RFC 9113 §8.3,
//! RFC 9114 §4.3). Only the wanted fields' values are decoded and kept.

use bytes::Bytes;
use http::header::{HeaderName, HeaderValue};
use http::StatusCode;

use super::coding::{huffman, text_to_vec};
use super::{FieldError, Text};
use crate::head::Head;

/// A malformed message (RFC 9113 §8.1.1, RFC 9114 §4.1.2).
const fn malformed(reason: &'static str) -> FieldError {
    FieldError::Malformed(reason)
}

/// Whether `byte` may be in a field name: a token character (RFC 9110
/// §5.6.2) that is not an uppercase letter (RFC 9113 §8.2.1, RFC 9114 §4.2).
const fn is_name_byte(byte: u8) -> bool {
    matches!(byte, b'a'..=b'z' | b'0'..=b'9' | b'!' | b'#' | b'$' | b'%' | b'&' | b'\''
        | b'*' | b'+' | b'-' | b'.' | b'^' | b'_' | b'`' | b'|' | b'~')
}

/// Checks the byte at `at` of a literal field name: a name byte, or the
/// `:` that starts a pseudo-header.
fn check_name_byte(at: usize, byte: u8) -> Result<(), FieldError> {
    match byte {
        _ if is_name_byte(byte) || (at == 0 && byte == b':') => Ok(()),
        b'A'..=b'Z' => Err(malformed("an uppercase field name")),
        _ => Err(malformed("an invalid character in a field name")),
    }
}

/// The bytes of `text`: a literal passes each byte through `check` first
/// and a Huffman-coded one is decoded into `buf`. The flag says whether
/// they are whole: a decoded string longer than `buf` keeps only its start.
fn text_bytes<'b>(
    text: Text<'b>,
    buf: &'b mut [u8],
    check: fn(usize, u8) -> Result<(), FieldError>,
) -> Result<(&'b [u8], bool), FieldError> {
    match text {
        Text::Static(text) => Ok((text.as_bytes(), true)),
        Text::Plain(text) => {
            for (at, &byte) in text.iter().enumerate() {
                check(at, byte)?;
            }
            Ok((text, true))
        }
        Text::Huffman(coded) => {
            let mut len = 0;
            huffman(coded, |byte| {
                check(len, byte)?;
                if let Some(slot) = buf.get_mut(len) {
                    *slot = byte;
                }
                len += 1;
                Ok(())
            })?;
            let whole = len <= buf.len();
            Ok((&buf[..len.min(buf.len())], whole))
        }
    }
}

/// What a field name is to a response.
enum Role {
    /// `:status`.
    Status,
    /// `content-length`.
    ContentLength,
    /// A field, and its index in the caller's wanted names if it is one.
    Field(Option<usize>),
}

/// How many bytes of a Huffman-coded field name are decoded onto the stack:
/// longer names still get checked, but cannot be wanted or a pseudo-header.
pub(crate) const NAME_BUF: usize = 128;

/// Checks a field name and says what it is. Static table names are known
/// good; a literal one must be lowercase token characters (or `:` and
/// them), non-empty and not connection-specific.
fn name_role(
    name: Text<'_>,
    buf: &mut [u8; NAME_BUF],
    wanted: &[HeaderName],
) -> Result<Role, FieldError> {
    let (name, whole) = text_bytes(name, buf, check_name_byte)?;
    match name {
        [] => return Err(malformed("an empty field name")),
        b"connection" | b"keep-alive" | b"proxy-connection" | b"te" | b"transfer-encoding"
        | b"upgrade" => return Err(malformed("a connection-specific field in a response")),
        _ => {}
    }
    match name.strip_prefix(b":") {
        Some(b"status") => Ok(Role::Status),
        Some(_) => Err(malformed(
            "a request or unknown pseudo-header in a response",
        )),
        None if !whole => Ok(Role::Field(None)),
        None if name == b"content-length" => Ok(Role::ContentLength),
        None => Ok(Role::Field(
            wanted.iter().position(|w| w.as_str().as_bytes() == name),
        )),
    }
}

/// Reads `:status`: three digits from 100 to 599 (RFC 9110 §15), and not
/// 101, as neither HTTP/2 (RFC 9113 §8.6) nor HTTP/3 (RFC 9114 §4.5) has
/// Upgrade.
fn status(value: Text<'_>) -> Result<StatusCode, FieldError> {
    let mut buf = [0; 3];
    let (digits, whole) = text_bytes(value, &mut buf, |_, _| Ok(()))?;
    StatusCode::from_bytes(digits)
        .ok()
        .filter(|status| {
            whole
                && (100..600).contains(&status.as_u16())
                && *status != StatusCode::SWITCHING_PROTOCOLS
        })
        .ok_or(malformed(
            "a :status that is not a status code from 100 to 599, or is 101",
        ))
}

/// Reads `content-length`: one decimal number (RFC 9110 §8.6); a second
/// line must say the same (the `h2` crate refuses lists and any other
/// form alike).
fn content_length(value: Text<'_>, known: Option<u64>) -> Result<u64, FieldError> {
    let mut buf = [0; 20];
    let (digits, whole) = text_bytes(value, &mut buf, |_, _| Ok(()))?;
    std::str::from_utf8(digits)
        .ok()
        .filter(|text| whole && !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()))
        .and_then(|text| text.parse().ok())
        .filter(|length| known.is_none_or(|known| known == *length))
        .ok_or(malformed(
            "a content-length that is not one decimal number, or two that differ",
        ))
}

/// A wanted field's value: the static table's without copying, a literal's
/// copied (decoded, if Huffman-coded) and checked for control characters.
fn header_value(value: Text<'_>) -> Result<HeaderValue, FieldError> {
    let value = match value {
        Text::Static(value) => Ok(HeaderValue::from_static(value)),
        Text::Plain(value) => HeaderValue::from_bytes(value),
        Text::Huffman(_) => {
            let mut decoded = Vec::new();
            text_to_vec(value, &mut decoded)?;
            HeaderValue::from_maybe_shared(Bytes::from(decoded))
        }
    };
    value.map_err(|_| malformed("a field value with a control character"))
}

/// A field section read as a response head, or as trailers, one field
/// line at a time as the codec decodes them.
pub(crate) struct SectionReader<'w> {
    wanted: &'w [HeaderName],
    trailers: bool,
    status: Option<StatusCode>,
    fields: Vec<(HeaderName, HeaderValue)>,
    content_length: Option<u64>,
    name_buf: [u8; NAME_BUF],
}

impl<'w> SectionReader<'w> {
    /// A reader of a response head that keeps the fields named in `wanted`.
    pub(crate) fn head(wanted: &'w [HeaderName]) -> Self {
        Self::new(wanted, false)
    }

    /// A reader of trailers, which are checked and dropped.
    pub(crate) fn trailers() -> Self {
        Self::new(&[], true)
    }

    fn new(wanted: &'w [HeaderName], trailers: bool) -> Self {
        Self {
            wanted,
            trailers,
            status: None,
            fields: Vec::new(),
            content_length: None,
            name_buf: [0; NAME_BUF],
        }
    }

    /// Takes one field line. Pseudo-headers must precede fields, so a field
    /// before `:status` means it is missing or late: malformed either way,
    /// and a `:status` after a field is necessarily the second one.
    pub(crate) fn field(&mut self, name: Text<'_>, value: Text<'_>) -> Result<(), FieldError> {
        match name_role(name, &mut self.name_buf, self.wanted)? {
            Role::Status if self.trailers => Err(malformed("a :status in trailers")),
            Role::Status if self.status.is_some() => Err(malformed("a second :status")),
            Role::Status => {
                self.status = Some(status(value)?);
                Ok(())
            }
            Role::Field(_) | Role::ContentLength if !self.trailers && self.status.is_none() => {
                Err(malformed("a response field before :status"))
            }
            Role::ContentLength if !self.trailers => {
                self.content_length = Some(content_length(value, self.content_length)?);
                Ok(())
            }
            Role::Field(Some(at)) => {
                self.fields
                    .push((self.wanted[at].clone(), header_value(value)?));
                Ok(())
            }
            Role::Field(_) | Role::ContentLength => Ok(()),
        }
    }

    /// Ends the section: a final head, or `None` for an interim (1xx) head,
    /// which the caller skips, and for trailers.
    pub(crate) fn finish(self) -> Result<Option<Head>, FieldError> {
        if self.trailers {
            return Ok(None);
        }
        let status = self
            .status
            .ok_or(malformed("a response head without :status"))?;
        if status.is_informational() {
            return Ok(None);
        }
        Ok(Some(Head {
            status,
            fields: self.fields,
            content_length: self.content_length,
        }))
    }
}
