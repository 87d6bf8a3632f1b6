"""picoquic's own HTTP/3 server (h3zero) serving ROOT, started through
aiopquic, for scripts/peer-server.sh. h3zero serves the folder from
picoquic's C thread; Python only starts it and waits. picoquic binds
0.0.0.0 and [::] on PORT: aiopquic takes no address.

Usage: python picoquic-server.py PORT ROOT CERT KEY
"""

import sys
import time

from aiopquic import __version__, _build_info
from aiopquic._binding._transport import TransportContext

port, root, cert, key = sys.argv[1:5]
context = TransportContext()
context.start(
    port=int(port),
    cert_file=cert,
    key_file=key,
    alpn="h3",
    is_client=False,
    # h3zero serves web_folder only when a WebTransport path is set.
    wt_path="/.well-known/h3lab-unused-wt",
    web_folder=root,
    # picoquic's default of 256 is below what `h3lab probe connections` holds.
    max_connections=4096,
)
print(
    f"picoquic {_build_info.PICOQUIC_VERSION} (aiopquic {__version__}) serving"
    f" {root} on UDP port {port} (h3)",
    flush=True,
)
while True:
    time.sleep(3600)
