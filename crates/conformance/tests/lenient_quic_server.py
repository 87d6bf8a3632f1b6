"""An HTTP/3 server on aioquic that takes transport parameters RFC 9000
calls invalid: the server the `transport.` cases are built to fail
(tests/servers.rs). aioquic refuses them, as it must; this server moves
each into range before aioquic looks, as a server that never checked
would, and answers every request with 200.

Usage: python3 lenient_quic_server.py CERT.pem KEY.pem
Prints `listening: udp 127.0.0.1:PORT`, then serves until killed.
"""

import asyncio
import sys

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
    return params


quic_connection.pull_quic_transport_parameters = lenient


class AnswerEverything(QuicConnectionProtocol):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._http = H3Connection(self._quic)

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
    asyncio.run(main(sys.argv[1], sys.argv[2]))
