//! The parsers of what a server sends on its streams: a request stream's
//! response, and its unidirectional streams (control, QPACK, others).

use super::qpack::*;
use super::*;

/// What a response stream yielded in one [`ResponseParser::feed`].
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Progress {
    /// The final response head, when these bytes completed it.
    pub head: Option<Head>,
    /// How many bytes of response content (DATA payload) these bytes held.
    pub body_bytes: u64,
}

/// The largest field section a response may carry. The client announces
/// no limit (RFC 9114 §4.2.2 lets it discard what it cannot process), and
/// a HEADERS frame split across packets is held whole until it ends, so
/// this bounds what one response can make it hold.
pub(super) const MAX_FIELD_SECTION: u64 = 64 * 1024;

/// The last final head a connection decoded, with its field section's
/// bytes and the fields it was read for. Without a dynamic table a section
/// decodes the same every time, and a server sends most responses the
/// same head (its `date` changes once a second), so a repeat costs a
/// comparison instead of a decode.
#[derive(Default)]
pub(crate) struct LastHead(Option<Kept>);

struct Kept {
    section: Vec<u8>,
    wanted: &'static [HeaderName],
    head: Head,
}

impl LastHead {
    fn decode(
        &mut self,
        section: &[u8],
        wanted: &'static [HeaderName],
    ) -> Result<Option<Head>, H3Error> {
        if let Some(kept) = &self.0 {
            if kept.section == section && std::ptr::eq(kept.wanted, wanted) {
                return Ok(Some(kept.head.clone()));
            }
        }
        let head = decode_head(section, wanted)?;
        if let Some(head) = &head {
            let kept = self.0.get_or_insert_with(|| Kept {
                section: Vec::new(),
                wanted,
                head: head.clone(),
            });
            kept.section.clear();
            kept.section.extend_from_slice(section);
            kept.wanted = wanted;
            kept.head.clone_from(head);
        }
        Ok(head)
    }
}

/// Where a response is in its message sequence (RFC 9114 §4.1).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Stage {
    /// Before the final head (interim heads may come).
    Head,
    /// After the final head: content, then perhaps trailers.
    Body,
    /// After the trailers: nothing but unknown frames may follow.
    Trailers,
}

/// Where a request stream is within its frames.
#[derive(Clone, Copy)]
pub(super) enum Frame {
    /// At a frame header (perhaps part of one kept in `Split`).
    Start,
    /// In a HEADERS payload of this length.
    Headers(u64),
    /// In DATA, this many bytes to go.
    Data(u64),
    /// In an unknown frame's payload, this many bytes to go.
    Skip(u64),
}

/// Incremental parser of one request stream's response bytes (RFC 9114
/// §4.1): response heads decoded, content counted but not kept, so that a
/// large body costs no memory. After an error, the stream is done with.
pub(crate) struct ResponseParser {
    wanted: &'static [HeaderName],
    stage: Stage,
    frame: Frame,
    /// A frame header the end of a feed cut in two.
    header: Split,
    /// A HEADERS payload the end of a feed cut; allocated only then, and
    /// at most [`MAX_FIELD_SECTION`] bytes.
    pub(super) section: Vec<u8>,
}

impl ResponseParser {
    /// A parser that returns the values of the fields named in `wanted`
    /// (e.g. `server-timing`) and skips every other field's value without
    /// decoding or copying it.
    pub(crate) fn new(wanted: &'static [HeaderName]) -> Self {
        Self {
            wanted,
            stage: Stage::Head,
            frame: Frame::Start,
            header: Split::default(),
            section: Vec::new(),
        }
    }

    /// Feeds the stream's next bytes, cut anywhere. Returns what they
    /// completed: the final response head (interim 1xx heads are skipped)
    /// and how many content bytes they carried. Errors are the RFC's for a
    /// frame out of place (§4.1, §7.2), an undecodable field section
    /// (RFC 9204) and a malformed head (§4.1.2). Unknown frame types are
    /// skipped however long; a HEADERS frame after the final head is the
    /// trailers, checked and dropped.
    pub(crate) fn feed(
        &mut self,
        mut input: &[u8],
        last: &mut LastHead,
    ) -> Result<Progress, H3Error> {
        let mut progress = Progress::default();
        while !input.is_empty() {
            match self.frame {
                Frame::Start => {
                    if let Some((ty, len)) = self.header.read(&mut input, varint_pair) {
                        self.frame = self.begin(ty, len)?;
                    }
                }
                Frame::Headers(len) => self.headers(&mut input, len, &mut progress, last)?,
                Frame::Data(left) => {
                    let n = consume(&mut input, left);
                    progress.body_bytes += n;
                    self.frame = payload(left - n, Frame::Data, Frame::Start);
                }
                Frame::Skip(left) => {
                    let n = consume(&mut input, left);
                    self.frame = payload(left - n, Frame::Skip, Frame::Start);
                }
            }
        }
        Ok(progress)
    }

    /// Checks the end of the stream (its FIN). A frame cut short is
    /// H3_FRAME_ERROR (RFC 9114 §7.1); a stream without a final response
    /// (nothing, or only interim heads) is an invalid sequence of messages,
    /// malformed: H3_MESSAGE_ERROR (§4.1.2). (H3_REQUEST_INCOMPLETE is the
    /// server's code for a cut request.)
    pub(crate) fn finish(&self) -> Result<(), H3Error> {
        if !matches!(self.frame, Frame::Start) || !self.header.is_empty() {
            return Err(frame_error("the response stream ends inside a frame"));
        }
        if self.stage == Stage::Head {
            return Err(malformed(
                "the response stream ends without a final response",
            ));
        }
        Ok(())
    }

    /// Starts a frame: whether its type may come now (RFC 9114 §4.1, §7.2)
    /// and where its payload goes.
    fn begin(&self, ty: u64, len: u64) -> Result<Frame, H3Error> {
        match ty {
            frame::DATA => match self.stage {
                Stage::Body => Ok(payload(len, Frame::Data, Frame::Start)),
                Stage::Head => Err(unexpected("DATA before the final response's HEADERS")),
                Stage::Trailers => Err(unexpected("DATA after the trailers")),
            },
            frame::HEADERS if self.stage == Stage::Trailers => {
                Err(unexpected("HEADERS after the trailers"))
            }
            frame::HEADERS if len == 0 => {
                Err(qpack("an empty HEADERS frame, without a section prefix"))
            }
            frame::HEADERS => Ok(Frame::Headers(len)),
            // A push ID past the maximum, which is unset while the client
            // sends no MAX_PUSH_ID (§4.6, §7.2.5).
            frame::PUSH_PROMISE => Err(H3Error::new(
                code::H3_ID_ERROR,
                "PUSH_PROMISE, though the client allows no push",
            )),
            frame::CANCEL_PUSH | frame::SETTINGS | frame::GOAWAY | frame::MAX_PUSH_ID => {
                Err(unexpected("a control stream frame on a request stream"))
            }
            ty if is_http2_frame(ty) => Err(unexpected("an HTTP/2 frame type HTTP/3 reserves")),
            _ => Ok(payload(len, Frame::Skip, Frame::Start)),
        }
    }

    /// Takes a HEADERS payload: in place when this feed holds all of it,
    /// the common case, else gathered across feeds.
    fn headers(
        &mut self,
        input: &mut &[u8],
        len: u64,
        progress: &mut Progress,
        last: &mut LastHead,
    ) -> Result<(), H3Error> {
        if len > MAX_FIELD_SECTION {
            return Err(H3Error::new(
                code::H3_EXCESSIVE_LOAD,
                "a response head over 64 KiB (the client holds no more)",
            ));
        }
        let all = *input;
        if self.section.is_empty() && len <= all.len() as u64 {
            let (section, rest) = all.split_at(len as usize);
            *input = rest;
            return self.section_done(section, progress, last);
        }
        let n = payload_part(len - self.section.len() as u64, all.len());
        self.section.extend_from_slice(&all[..n]);
        *input = &all[n..];
        if self.section.len() as u64 == len {
            let section = std::mem::take(&mut self.section);
            self.section_done(&section, progress, last)?;
        }
        Ok(())
    }

    /// Reads a complete field section: a head while the final one is still
    /// to come, else the trailers.
    fn section_done(
        &mut self,
        section: &[u8],
        progress: &mut Progress,
        last: &mut LastHead,
    ) -> Result<(), H3Error> {
        self.frame = Frame::Start;
        if self.stage == Stage::Head {
            if let Some(head) = last.decode(section, self.wanted)? {
                progress.head = Some(head);
                self.stage = Stage::Body;
            }
        } else {
            check_trailers(section)?;
            self.stage = Stage::Trailers;
        }
        Ok(())
    }
}

/// The type of a unidirectional stream (RFC 9114 §6.2, RFC 9204 §4.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum UniKind {
    Control,
    Push,
    QpackEncoder,
    QpackDecoder,
    /// A reserved or extension type, to be ignored (§6.2.3, §9).
    Unknown,
}

impl UniKind {
    fn of(ty: u64) -> Self {
        match ty {
            0x00 => Self::Control,
            0x01 => Self::Push,
            0x02 => Self::QpackEncoder,
            0x03 => Self::QpackDecoder,
            _ => Self::Unknown,
        }
    }
}

/// Where a control stream is within its frames.
#[derive(Clone, Copy, Default)]
pub(super) enum Control {
    /// At the first frame header, which must be SETTINGS'.
    #[default]
    First,
    /// At a later frame header.
    Start,
    /// In SETTINGS, this many bytes to go.
    Settings(u64),
    /// In GOAWAY, this many bytes to go.
    Goaway(u64),
    /// In an unknown frame, this many bytes to go.
    Skip(u64),
}

/// Incremental parser of one of the server's unidirectional streams. On
/// the control stream it checks the frames and reports GOAWAY. The QPACK
/// streams' instructions are discarded: with a capacity-0 table the
/// server's encoder can only set that capacity to 0, and its decoder has
/// nothing to acknowledge, the client's sections using no table. Unknown
/// streams are discarded. A second control stream is not refused: the
/// load generator reads each on its own.
#[derive(Default)]
pub(crate) struct UniStreamParser {
    pub(super) kind: Option<UniKind>,
    control: Control,
    /// The stream type, a frame header, a setting or a GOAWAY ID cut by
    /// the end of a feed.
    split: Split,
    /// The last GOAWAY's stream ID.
    goaway: Option<u64>,
}

impl UniStreamParser {
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// Feeds the stream's next bytes, cut anywhere; returns the stream ID
    /// of the last GOAWAY they completed. A push stream is H3_ID_ERROR: the
    /// client sends no MAX_PUSH_ID (RFC 9114 §4.6).
    pub(crate) fn feed(&mut self, mut input: &[u8]) -> Result<Option<u64>, H3Error> {
        let mut goaway = None;
        while !input.is_empty() {
            match self.kind {
                None => {
                    self.kind = self.split.read(&mut input, varint).map(UniKind::of);
                    if self.kind == Some(UniKind::Push) {
                        return Err(H3Error::new(
                            code::H3_ID_ERROR,
                            "a push stream, though the client allows no push",
                        ));
                    }
                }
                Some(UniKind::Control) => goaway = self.control(&mut input)?.or(goaway),
                Some(_) => break,
            }
        }
        Ok(goaway)
    }

    /// Checks the end (FIN or reset) of the stream: closing the control
    /// stream or a QPACK stream is H3_CLOSED_CRITICAL_STREAM (RFC 9114
    /// §6.2.1, RFC 9204 §4.2); other streams may end.
    pub(crate) fn finish(&self) -> Result<(), H3Error> {
        match self.kind {
            Some(UniKind::Control | UniKind::QpackEncoder | UniKind::QpackDecoder) => {
                Err(H3Error::new(
                    code::H3_CLOSED_CRITICAL_STREAM,
                    "the server closed a critical stream",
                ))
            }
            _ => Ok(()),
        }
    }

    /// Takes the control stream's next bytes (RFC 9114 §6.2.1): SETTINGS
    /// first and once, GOAWAY's ID returned, unknown frames skipped.
    fn control(&mut self, input: &mut &[u8]) -> Result<Option<u64>, H3Error> {
        match self.control {
            Control::First | Control::Start => {
                if let Some((ty, len)) = self.split.read(input, varint_pair) {
                    self.control = self.begin(ty, len)?;
                }
            }
            Control::Settings(left) => {
                if let Some((id, _)) = self.within(input, left, varint_pair, Control::Settings)? {
                    check_setting(id)?;
                }
            }
            Control::Goaway(left) => {
                if let Some(id) = self.within(input, left, varint, Control::Goaway)? {
                    return self.goaway(id).map(Some);
                }
            }
            Control::Skip(left) => {
                let n = consume(input, left);
                self.control = payload(left - n, Control::Skip, Control::Start);
            }
        }
        Ok(None)
    }

    /// Starts a control stream frame: whether its type may come now
    /// (RFC 9114 §6.2.1, §7.2) and where its payload goes.
    fn begin(&self, ty: u64, len: u64) -> Result<Control, H3Error> {
        let first = matches!(self.control, Control::First);
        match ty {
            frame::SETTINGS if first => Ok(payload(len, Control::Settings, Control::Start)),
            _ if first => Err(H3Error::new(
                code::H3_MISSING_SETTINGS,
                "the control stream does not open with SETTINGS",
            )),
            frame::SETTINGS => Err(unexpected("a second SETTINGS")),
            frame::GOAWAY if len == 0 => Err(frame_error("a GOAWAY without a stream ID")),
            frame::GOAWAY => Ok(Control::Goaway(len)),
            // A push ID past the maximum, unset without MAX_PUSH_ID (§7.2.3).
            frame::CANCEL_PUSH => Err(H3Error::new(
                code::H3_ID_ERROR,
                "CANCEL_PUSH, though the client allows no push",
            )),
            frame::DATA | frame::HEADERS | frame::PUSH_PROMISE | frame::MAX_PUSH_ID => Err(
                unexpected("a request stream or client frame on the control stream"),
            ),
            ty if is_http2_frame(ty) => Err(unexpected("an HTTP/2 frame type HTTP/3 reserves")),
            _ => Ok(payload(len, Control::Skip, Control::Start)),
        }
    }

    /// Reads an item of a frame payload with `left` bytes to go, in state
    /// `going`; the payload ending inside the item is H3_FRAME_ERROR.
    fn within<T>(
        &mut self,
        input: &mut &[u8],
        left: u64,
        parse: fn(&[u8]) -> Option<(T, usize)>,
        going: fn(u64) -> Control,
    ) -> Result<Option<T>, H3Error> {
        let all = *input;
        let mut window = &all[..payload_part(left, all.len())];
        let before = window.len();
        let item = self.split.read(&mut window, parse);
        let used = before - window.len();
        *input = &all[used..];
        let left = left - used as u64;
        if left == 0 && !self.split.is_empty() {
            return Err(frame_error(
                "a control frame's payload ends inside an integer",
            ));
        }
        self.control = payload(left, going, Control::Start);
        Ok(item)
    }

    /// Takes a GOAWAY's stream ID (RFC 9114 §5.2, §7.2.6): the payload's
    /// only field, a client-initiated bidirectional stream, and no larger
    /// than an earlier GOAWAY's.
    fn goaway(&mut self, id: u64) -> Result<u64, H3Error> {
        if !matches!(self.control, Control::Start) {
            return Err(frame_error("a GOAWAY with bytes after its stream ID"));
        }
        if id % 4 != 0 {
            return Err(H3Error::new(
                code::H3_ID_ERROR,
                "a GOAWAY naming a stream that is not a client's bidirectional one",
            ));
        }
        if self.goaway.is_some_and(|last| id > last) {
            return Err(H3Error::new(
                code::H3_ID_ERROR,
                "a GOAWAY with a larger ID than the last",
            ));
        }
        self.goaway = Some(id);
        Ok(id)
    }
}

/// Checks a received setting's identifier: HTTP/2's settings without an
/// HTTP/3 counterpart are reserved and must not be received (RFC 9114
/// §7.2.4.1, §11.2.2). Values are not kept: the client's encoder uses no
/// dynamic table and its requests are far below any field section limit.
pub(super) fn check_setting(id: u64) -> Result<(), H3Error> {
    if matches!(id, 0x00 | 0x02..=0x05) {
        return Err(H3Error::new(
            code::H3_SETTINGS_ERROR,
            "SETTINGS has an HTTP/2 setting HTTP/3 reserves",
        ));
    }
    Ok(())
}
