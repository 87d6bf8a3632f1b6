#!/usr/bin/env python3
"""Request header lists for the shims, and the decoding of what the shims captured.

  analyze.py requests HEADERS_TXT PORT N DIR   write DIR/0 .. DIR/N-1, request n's headers
  analyze.py report [-v] CASE_DIR...           print the table (-v: also each field's encoding)

A case dir holds `meta` ("h3|h2 <label...>"), `reqs/` and the captures. h3: cli.bytes and srv.bytes
(shim.so), cli.qlog and qlog-srv/*.sqlog. h2: h2.bytes (shim_h2.so) and cli.log (nghttp -v).
Every check that fails stops the report with a message.
"""
import collections
import glob
import json
import os
import sys

import pylsqpack
from hpack import Decoder as HpackDecoder
from hpack.huffman_table import decode_huffman

MASK64 = (1 << 64) - 1


def fail(msg):
    sys.exit(f'analyze.py: {msg}')


# --- request header lists -----------------------------------------------------------------

def splitmix64(x):
    """SplitMix64's output function, as h3lab's browser_headers.rs has it."""
    z = (x + 0x9E3779B97F4A7C15) & MASK64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
    return z ^ (z >> 31)


def varying(n):
    """h3lab's browser_headers::varying: the n-th request's (from 0) traceparent and x-request-id."""
    a, b, c = (splitmix64((n * 3 + k) & MASK64) for k in (1, 2, 3))
    request_id = (f'{c >> 32:08x}-{(c >> 16) & 0xFFFF:04x}-4{b & 0xFFF:03x}-'
                  f'{0x8000 | (a & 0x3FFF):04x}-{(a >> 16) & 0xFFFFFFFFFFFF:012x}')
    return [('traceparent', f'00-{a:016x}{b:016x}-{c:016x}-01'), ('x-request-id', request_id)]


def request_headers(headers_txt, port, n):
    fixed = []
    for line in open(headers_txt):
        line = line.rstrip('\n')
        if line and not line.startswith('#'):
            name, value = line.split(': ', 1)
            fixed.append((name, value.replace('PORT', port)))
    pseudo = [(':method', 'GET'), (':scheme', 'https'), (':authority', f'localhost:{port}'),
              (':path', f'/r/{n + 1}')]
    return pseudo + fixed + varying(n)


def write_requests(headers_txt, port, count, out_dir):
    os.makedirs(out_dir, exist_ok=True)
    for n in range(count):
        with open(f'{out_dir}/{n}', 'w') as f:
            f.writelines(f'{name}: {value}\n' for name, value in request_headers(headers_txt, port, n))


def read_requests(reqs_dir):
    lists, n = [], 0
    while os.path.exists(f'{reqs_dir}/{n}'):
        lists.append([tuple(part.encode() for part in line.rstrip('\n').split(': ', 1))
                      for line in open(f'{reqs_dir}/{n}')])
        n += 1
    return lists


# --- wire primitives ----------------------------------------------------------------------

def varint(b, i):
    """QUIC variable-length integer at b[i]; returns (value, next index)."""
    length = 1 << (b[i] >> 6)
    v = b[i] & 0x3F
    for k in range(1, length):
        v = (v << 8) | b[i + k]
    return v, i + length


def prefix_int(b, i, bits):
    """HPACK/QPACK integer with an n-bit prefix."""
    limit = (1 << bits) - 1
    v = b[i] & limit
    i += 1
    if v < limit:
        return v, i
    shift = 0
    while True:
        c = b[i]
        i += 1
        v += (c & 0x7F) << shift
        shift += 7
        if not c & 0x80:
            return v, i


def string(b, i, bits):
    """String literal whose Huffman flag sits just above an n-bit length prefix."""
    huffman = b[i] & (1 << bits)
    length, i = prefix_int(b, i, bits)
    raw = bytes(b[i:i + length])
    return (decode_huffman(raw) if huffman else raw), i + length


# --- HTTP/3 and QPACK ---------------------------------------------------------------------

def qpack_lines(block):
    """The field lines' encodings (RFC 9204 4.5): [(kind, bytes)]."""
    _, i = prefix_int(block, 0, 8)  # Required Insert Count
    _, i = prefix_int(block, i, 7)  # sign and Delta Base
    out = []
    while i < len(block):
        start, c = i, block[i]
        if c & 0x80:
            _, i = prefix_int(block, i, 6)
            kind = 'indexed ' + ('static' if c & 0x40 else 'dynamic')
        elif c & 0x40:
            _, i = prefix_int(block, i, 4)
            _, i = string(block, i, 7)
            kind = 'name ref ' + ('static' if c & 0x10 else 'dynamic') + ' + literal value'
        elif c & 0x20:
            _, i = string(block, i, 3)
            _, i = string(block, i, 7)
            kind = 'literal name + literal value'
        elif c & 0x10:
            _, i = prefix_int(block, i, 4)
            kind = 'indexed dynamic (post-base)'
        else:
            _, i = prefix_int(block, i, 3)
            _, i = string(block, i, 7)
            kind = 'name ref dynamic (post-base) + literal value'
        out.append((kind, i - start))
    return out


def encoder_instructions(b):
    """The encoder stream's instructions (RFC 9204 4.3), after the stream type: [(text, bytes)]."""
    i, out = 0, []
    while i < len(b):
        start, c = i, b[i]
        if c & 0x80:
            _, i = prefix_int(b, i, 6)
            value, i = string(b, i, 7)
            text = f'insert, {"static" if c & 0x40 else "dynamic"} name ref, {len(value)}-byte value'
        elif c & 0x40:
            name, i = string(b, i, 5)
            value, i = string(b, i, 7)
            text = f'insert {name.decode()}, {len(value)}-byte value'
        elif c & 0x20:
            capacity, i = prefix_int(b, i, 5)
            text = f'set capacity {capacity}'
        else:
            _, i = prefix_int(b, i, 5)
            text = 'duplicate'
        out.append((text, i - start))
    return out


def h3_frames(b):
    """[(type, header bytes, payload)] of a stream's complete frames."""
    i, out = 0, []
    while i < len(b):
        start = i
        ftype, i = varint(b, i)
        length, i = varint(b, i)
        if i + length > len(b):
            break
        out.append((ftype, i - start, bytes(b[i:i + length])))
        i += length
    return out


def load_h3_capture(path):
    """shim.so's log as [(stream id, bytes)] in the order QUIC accepted them."""
    events = []
    for line in open(path):
        parts = line.split()
        if parts[0] == 'W':
            hexbytes = parts[3] if len(parts) > 3 else ''
            if hexbytes == '?':
                fail(f'{path}: the shim missed bytes on stream {parts[1]}')
            events.append((int(parts[1]), bytes.fromhex(hexbytes)))
    return events


def qlog_stream_ends(path):
    """Per stream, the highest offset + length of STREAM frames in sent packets."""
    ends = collections.Counter()
    for record in open(path).read().split('\x1e'):
        if not record.strip():
            continue
        event = json.loads(record)
        if event.get('name') == 'transport:packet_sent':
            for frame in event['data'].get('frames', []):
                if frame.get('frame_type') == 'stream':
                    end = frame['offset'] + frame['length']
                    ends[frame['stream_id']] = max(ends[frame['stream_id']], end)
    return ends


def h3_side(capture, qlog):
    """Decodes one endpoint's capture in the order it was written, feeding its encoder
    stream to an lsqpack decoder as it goes, and checks every stream's length against the qlog."""
    decoder = pylsqpack.Decoder(4096, 100)
    streams = collections.defaultdict(bytearray)
    uni_type, heads, headers, blocked = {}, {}, {}, set()
    for sid, chunk in load_h3_capture(capture):
        buf = streams[sid]
        start = len(buf)
        buf += chunk
        if sid & 2:  # unidirectional: control, QPACK encoder or decoder stream
            if sid not in uni_type and buf:
                uni_type[sid] = buf[0]
            if uni_type.get(sid) == 2 and len(buf) > max(start, 1):
                for unblocked in decoder.feed_encoder(bytes(buf[max(start, 1):])):
                    headers[unblocked] = decoder.resume_header(unblocked)[1]
        elif sid not in heads:
            frames = h3_frames(buf)
            if frames:
                ftype, header_len, block = frames[0]
                if ftype != 1:
                    fail(f'{capture}: stream {sid} starts with frame type {ftype}, not HEADERS')
                heads[sid] = (header_len, block)
                try:
                    headers[sid] = decoder.feed_header(sid, block)[1]
                except pylsqpack.StreamBlocked:
                    blocked.add(sid)
    ends = qlog_stream_ends(qlog)
    lengths = {sid: len(b) for sid, b in streams.items() if b}
    if lengths != dict(ends):
        fail(f'{capture} disagrees with {qlog}: capture {sorted(lengths.items())}, qlog {sorted(ends.items())}')
    by_type = {t: streams[sid] for sid, t in uni_type.items()}
    settings = {}
    for ftype, _, payload in h3_frames(by_type.get(0, b'')[1:]):
        if ftype == 4:
            i = 0
            while i < len(payload):
                key, i = varint(payload, i)
                settings[key], i = varint(payload, i)
    encoder = bytes(by_type.get(2, b''))
    return {
        'heads': [(sid, header_len, block, sid in blocked, headers.get(sid))
                  for sid, (header_len, block) in sorted(heads.items())],
        'encoder': encoder,
        'settings': f'table capacity {settings.get(1, 0)}, blocked streams {settings.get(7, 0)}',
        'streams': len(lengths),
    }


def h3_case(d, requests):
    sides = {'requests': h3_side(f'{d}/cli.bytes', f'{d}/cli.qlog')}
    server_qlogs = glob.glob(f'{d}/qlog-srv/*.sqlog')
    if len(server_qlogs) != 1:
        fail(f'{d}/qlog-srv: expected one server qlog, found {len(server_qlogs)}')
    sides['responses'] = h3_side(f'{d}/srv.bytes', server_qlogs[0])
    got = [h[4] for h in sides['requests']['heads']]
    if got != requests:
        fail(f'{d}: the decoded request headers are not the ones in {d}/reqs')
    if any(h[4] is None for h in sides['responses']['heads']):
        fail(f'{d}: a response header block did not decode')
    rows, detail = [], []
    for direction, side in sides.items():
        heads = side['heads']
        rows.append((direction, [len(h[2]) for h in heads], [h[1] + len(h[2]) for h in heads],
                     len(side['encoder'])))
        instructions = encoder_instructions(side['encoder'][1:])
        detail.append(f'    {direction}: encoder stream {len(side["encoder"])} B: type byte' +
                      ''.join(f'; {text} ({n} B)' for text, n in instructions))
        for number in (0, 1):
            sid, _, block, was_blocked, fields = heads[number]
            detail.append(f'    {direction} #{number + 1} (stream {sid}), QPACK block {len(block)} B'
                          f'{", blocked on the encoder stream" if was_blocked else ""}:')
            detail += [f'      {name.decode():20s} {n:4d} B  {kind}'
                       for (name, _), (kind, n) in zip(fields, qpack_lines(block))]
    checks = (f'{sides["requests"]["streams"]} + {sides["responses"]["streams"]} streams: capture = qlog; '
              f'client SETTINGS {sides["requests"]["settings"]}; server SETTINGS {sides["responses"]["settings"]}; '
              f'{len(got)} request header lists as written')
    return rows, checks, detail


# --- HTTP/2 and HPACK ---------------------------------------------------------------------

PREFACE = b'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n'


def hpack_lines(block):
    """The header field representations (RFC 7541 6): [(kind, bytes, is a field)]."""
    i, out = 0, []
    while i < len(block):
        start, c = i, block[i]
        if c & 0x80:
            index, i = prefix_int(block, i, 7)
            out.append(('indexed ' + ('static' if index <= 61 else 'dynamic'), i - start, True))
            continue
        if (c & 0xE0) == 0x20:
            _, i = prefix_int(block, i, 5)
            out.append(('table size update', i - start, False))
            continue
        incremental = c & 0x40
        index, i = prefix_int(block, i, 6 if incremental else 4)
        if index == 0:
            _, i = string(block, i, 7)
        _, i = string(block, i, 7)
        name = 'literal name' if index == 0 else 'name ref ' + ('static' if index <= 61 else 'dynamic')
        how = 'indexed' if incremental else 'never indexed' if c & 0x10 else 'not indexed'
        out.append((f'{name} + literal value ({how})', i - start, True))
    return out


def h2_header_blocks(data):
    """[(stream id, HEADERS payload bytes, HPACK block)] in order, CONTINUATIONs joined."""
    i, out = 0, []
    while i + 9 <= len(data):
        length = int.from_bytes(data[i:i + 3], 'big')
        ftype, flags = data[i + 3], data[i + 4]
        sid = int.from_bytes(data[i + 5:i + 9], 'big') & 0x7FFFFFFF
        payload = data[i + 9:i + 9 + length]
        i += 9 + length
        if ftype == 1:
            pad = payload[0] if flags & 0x08 else 0
            skip = (1 if flags & 0x08 else 0) + (5 if flags & 0x20 else 0)
            out.append([sid, length, payload[skip:length - pad]])
        elif ftype == 9:
            out[-1][1] += length
            out[-1][2] += payload
    return out


def h2_case(d, requests):
    sent, received = bytearray(), bytearray()
    for line in open(f'{d}/h2.bytes'):
        direction, hexbytes = line.split()
        (sent if direction == 'S' else received).extend(bytes.fromhex(hexbytes))
    if not sent.startswith(PREFACE):
        fail(f'{d}/h2.bytes: the sent bytes do not start with the HTTP/2 preface')
    # nghttp -v's own account of the HEADERS frames, to check the parse against
    logged = collections.defaultdict(list)
    for line in open(f'{d}/cli.log'):
        if 'HEADERS frame <length=' in line:
            direction = line.split()[2]
            length = int(line.split('length=')[1].split(',')[0])
            sid = int(line.split('stream_id=')[1].split('>')[0])
            logged[direction].append((sid, length))
    rows, detail, decoded = [], [], {}
    for direction, key, data in (('requests', 'send', bytes(sent[len(PREFACE):])),
                                 ('responses', 'recv', bytes(received))):
        blocks = h2_header_blocks(data)
        if [(sid, length) for sid, length, _ in blocks] != logged[key]:
            fail(f'{d}: {direction} HEADERS frames {[(s, n) for s, n, _ in blocks]} '
                 f'differ from nghttp -v {logged[key]}')
        hpack = HpackDecoder()
        decoded[direction] = [[tuple(field) for field in hpack.decode(block, raw=True)]
                              for _, _, block in blocks]
        rows.append((direction, [len(block) for _, _, block in blocks], None, None))
        for number in (0, 1):
            sid, _, block = blocks[number]
            detail.append(f'    {direction} #{number + 1} (stream {sid}), HPACK block {len(block)} B:')
            fields = iter(decoded[direction][number])
            detail += [f'      {next(fields)[0].decode() if is_field else "":20s} {n:4d} B  {kind}'
                       for kind, n, is_field in hpack_lines(block)]
    if decoded['requests'] != requests:
        fail(f'{d}: the decoded request headers are not the ones in {d}/reqs')
    checks = (f'HEADERS frames = nghttp -v ({len(rows[0][1])} sent, {len(rows[1][1])} received); '
              f'{len(requests)} request header lists as written')
    return rows, checks, detail


# --- the table ----------------------------------------------------------------------------

def mean(values):
    return f'{sum(values) / len(values):.1f}' if values else '-'


def report(case_dirs, verbose):
    header = ('case', 'dir', '#1 block', 'mean #2-N', '#1 frame', 'mean #2-N', 'enc stream', 'sum blocks+enc')
    table, notes = [], []
    for d in case_dirs:
        proto, label = open(f'{d}/meta').read().split(' ', 1)
        label = label.strip()
        requests = read_requests(f'{d}/reqs')
        rows, checks, detail = (h3_case if proto == 'h3' else h2_case)(d, requests)
        for direction, blocks, frames, encoder in rows:
            if len(blocks) != len(requests):
                fail(f'{d}: {len(blocks)} {direction} header blocks, expected {len(requests)}')
            table.append((label, {'requests': 'req', 'responses': 'resp'}[direction], blocks[0], mean(blocks[1:]),
                          frames[0] if frames else '-', mean(frames[1:]) if frames else '-',
                          encoder if encoder is not None else '-', sum(blocks) + (encoder or 0)))
        notes.append(f'  {label}: {checks}')
        if verbose:
            notes += detail
    widths = [max(len(str(row[k])) for row in table + [header]) for k in range(len(header))]
    for row in [header] + table:
        print('  '.join(str(v).ljust(w) if k < 2 else str(v).rjust(w) for k, (v, w) in enumerate(zip(row, widths))))
    print()
    print('block: h3 = QPACK field section (the HEADERS frame payload), h2 = HPACK block (HEADERS payload);\n'
          'frame: h3 HEADERS frame with its type and length; enc stream: QPACK encoder stream incl. its type byte.')
    print('checks:')
    print('\n'.join(notes))


def main(args):
    if args[:1] == ['requests'] and len(args) == 5:
        write_requests(args[1], args[2], int(args[3]), args[4])
    elif args[:1] == ['report']:
        verbose = '-v' in args
        report([a for a in args[1:] if a != '-v'], verbose)
    else:
        sys.exit(__doc__)


if __name__ == '__main__':
    main(sys.argv[1:])
