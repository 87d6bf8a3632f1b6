"""An HTTP/3 server on aioquic that takes what RFC 9000 tells a server to
refuse: the server the `transport.` cases are built to fail
(tests/servers.rs). aioquic refuses all of it, as it must; this server
moves each invalid transport parameter into range (and drops the
server-only ones) before aioquic looks, takes every frame in every packet
type, skips the frames a client must not send and a frame of unknown type,
lifts its stream and flow-control limits for whatever the client sends,
as a server that never checked would, and answers every request with 200.

With --blocked-streams-beyond-settings, its QPACK decoder also lets more
requests block than its SETTINGS_QPACK_BLOCKED_STREAMS says: the server
`qpack.blocked-streams-overflow` is built to fail. Without it, aioquic's
QPACK (ls-qpack) refuses them, and the case passes.

Usage: python3 lenient_quic_server.py CERT.pem KEY.pem [--blocked-streams-beyond-settings]
Prints `listening: udp 127.0.0.1:PORT`, then serves until killed.
"""

import asyncio
import sys

import pylsqpack

import aioquic.asyncio.server as quic_server
import aioquic.quic.connection as quic_connection
from aioquic.asyncio import QuicConnectionProtocol, serve
from aioquic.h3.connection import H3_ALPN, H3Connection
from aioquic.h3.events import HeadersReceived
from aioquic.quic.configuration import QuicConfiguration

parse_transport_parameters = quic_connection.pull_quic_transport_parameters


def lenient(buf):
    params = parse_transport_parameters(buf)
    if params.max_udp_payload_size is not None:
        params.max_udp_payload_size = max(params.max_udp_payload_size, 1200)
    if params.max_ack_delay is not None:
        params.max_ack_delay = min(params.max_ack_delay, 2**14 - 1)
    for name in ("initial_max_streams_bidi", "initial_max_streams_uni"):
        if getattr(params, name) is not None:
            setattr(params, name, min(getattr(params, name), 2**60))
    params.stateless_reset_token = None
    params.original_destination_connection_id = None
    return params


quic_connection.pull_quic_transport_parameters = lenient

# The frame type of `transport.unknown-frame-type`, skipped as if it had no
# payload (which it has not).
UNKNOWN_FRAME_TYPE = 0x2D0D1E77


def skip_varints(count):
    def skip(context, frame_type, buf):
        for _ in range(count):
            buf.pull_uint_var()

    return skip


def skip_new_token(context, frame_type, buf):
    buf.pull_bytes(buf.pull_uint_var())


def skip_new_connection_id(context, frame_type, buf):
    buf.pull_uint_var()  # Sequence Number
    buf.pull_uint_var()  # Retire Prior To
    buf.pull_bytes(buf.pull_uint8())  # Connection ID
    buf.pull_bytes(16)  # Stateless Reset Token


class LenientConnection(quic_connection.QuicConnection):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        handlers = self._QuicConnection__frame_handlers
        everywhere = quic_connection.EPOCHS("IH01")
        for frame_type, (handler, _) in list(handlers.items()):
            handlers[frame_type] = (handler, everywhere)
        handlers[0x04] = (skip_varints(3), everywhere)  # RESET_STREAM
        handlers[0x05] = (skip_varints(2), everywhere)  # STOP_SENDING
        handlers[0x07] = (skip_new_token, everywhere)
        handlers[0x18] = (skip_new_connection_id, everywhere)
        handlers[0x1E] = (skip_varints(0), everywhere)  # HANDSHAKE_DONE
        handlers[UNKNOWN_FRAME_TYPE] = (skip_varints(0), everywhere)

    def _get_or_create_stream(self, frame_type, stream_id):
        limit = self._stream_limit(stream_id)
        advertised = limit.value
        limit.value = max(advertised, stream_id // 4 + 1)
        try:
            stream = super()._get_or_create_stream(frame_type, stream_id)
        finally:
            limit.value = advertised
        # As if that were the limit sent, so that none is sent for a stream
        # the client never opened.
        stream.max_stream_data_local = 2**62 - 1
        stream.max_stream_data_local_sent = stream.max_stream_data_local
        return stream

    def _handle_stream_frame(self, context, frame_type, buf):
        advertised = self._local_max_data.value
        self._local_max_data.value = 2**62 - 1
        try:
            super()._handle_stream_frame(context, frame_type, buf)
        finally:
            self._local_max_data.value = max(advertised, self._local_max_data.used)


quic_server.QuicConnection = LenientConnection


class BlockedStreamsBeyondSettings(H3Connection):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # SETTINGS still announce self._blocked_streams.
        self._decoder = pylsqpack.Decoder(
            self._max_table_capacity, self._blocked_streams + 100
        )


class AnswerEverything(QuicConnectionProtocol):
    http_connection = H3Connection

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._http = self.http_connection(self._quic)

    def quic_event_received(self, event):
        for http_event in self._http.handle_event(event):
            if isinstance(http_event, HeadersReceived) and http_event.stream_ended:
                self._http.send_headers(
                    http_event.stream_id, [(b":status", b"200")], end_stream=True
                )
        self.transmit()


async def main(cert, key):
    configuration = QuicConfiguration(is_client=False, alpn_protocols=H3_ALPN)
    configuration.load_cert_chain(cert, key)
    server = await serve(
        "127.0.0.1", 0, configuration=configuration, create_protocol=AnswerEverything
    )
    host, port = server._transport.get_extra_info("sockname")[:2]
    print(f"listening: udp {host}:{port}", flush=True)
    await asyncio.Future()


if __name__ == "__main__":
    if sys.argv[3:] == ["--blocked-streams-beyond-settings"]:
        AnswerEverything.http_connection = BlockedStreamsBeyondSettings
    elif sys.argv[3:]:
        sys.exit(f"unknown arguments {sys.argv[3:]}: see the usage at the top of this file")
    asyncio.run(main(sys.argv[1], sys.argv[2]))
