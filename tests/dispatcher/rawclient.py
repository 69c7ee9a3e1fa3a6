"""A deliberately low-level tuner-channel client for tests: it stands in for
`python -m nni` (TRIALQ_PYTHON points at it; the launch arguments are ignored) and
checks how the api's WebSocket server handles frames nni's client never sends.
RAW_MODE=fragments: answers IN with ID split into a text frame and a continuation, with a
ping between them (and checks the pong), then sends ER split in three fragments.
RAW_MODE=unmasked: sends an unmasked frame, which a server must refuse."""
import base64
import hashlib
import json
import os
import socket
import struct
import sys
from urllib.parse import urlparse


def frame(opcode, payload, fin=True, mask=True):
    head = bytes([(0x80 if fin else 0) | opcode])
    n = len(payload)
    m = 0x80 if mask else 0
    if n < 126:
        head += bytes([m | n])
    else:
        head += bytes([m | 126]) + struct.pack('!H', n)
    if not mask:
        return head + payload
    key = os.urandom(4)
    return head + key + bytes(b ^ key[i % 4] for i, b in enumerate(payload))


def main():
    u = urlparse(os.environ['NNI_TUNER_COMMAND_CHANNEL'])
    s = socket.create_connection((u.hostname, u.port), timeout=20)
    key = base64.b64encode(os.urandom(16)).decode()
    s.sendall(('GET %s HTTP/1.1\r\nHost: x\r\nUpgrade: WebSocket\r\nConnection: keep-alive, Upgrade\r\n'
               'Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n\r\n' % (u.path, key)).encode())
    buf = b''
    while b'\r\n\r\n' not in buf:
        buf += s.recv(4096)
    head, buf = buf.split(b'\r\n\r\n', 1)
    want = base64.b64encode(hashlib.sha1((key + '258EAFA5-E914-47DA-95CA-C5AB0DC85B11').encode()).digest())
    assert b' 101 ' in head and b'Sec-WebSocket-Accept: ' + want in head, head

    def recv_frame():
        nonlocal buf
        while len(buf) < 2:
            buf += s.recv(4096)
        n = buf[1] & 0x7F
        hl = 2 + (2 if n == 126 else 8 if n == 127 else 0)
        while len(buf) < hl:
            buf += s.recv(4096)
        if n == 126:
            n = struct.unpack('!H', buf[2:4])[0]
        elif n == 127:
            n = struct.unpack('!Q', buf[2:10])[0]
        while len(buf) < hl + n:
            buf += s.recv(65536)
        op, payload, buf = buf[0] & 0x0F, buf[hl:hl + n], buf[hl + n:]
        return op, payload

    op, payload = recv_frame()
    assert op == 1 and json.loads(payload)['type'] == 'IN', (op, payload)
    if os.environ.get('RAW_MODE') == 'unmasked':
        s.sendall(frame(1, b'{"type":"ID","content":""}', mask=False))
    else:
        msg = json.dumps({'type': 'ID', 'content': ''}).encode()
        s.sendall(frame(1, msg[:5], fin=False) + frame(9, b'are you there') + frame(0, msg[5:]))
        while True:
            op, payload = recv_frame()
            if op == 10:
                assert payload == b'are you there', payload
                break
        msg = json.dumps({'type': 'ER', 'content': 'raw client: fragments joined, pong received'}).encode()
        s.sendall(frame(1, msg[:10], fin=False) + frame(0, msg[10:20], fin=False) + frame(0, msg[20:]))
    try:
        while recv_frame()[0] != 8:
            pass
    except (OSError, AssertionError):
        pass
    sys.exit(0)


if __name__ == '__main__':
    main()
