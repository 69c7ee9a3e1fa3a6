"""The tuner command channel, dispatcher side: NNI >= 3.0's WebSocket (a client written on
socket: handshake, masked frames, ping/pong, close) or NNI's legacy pipes (fd 3 in, fd 4
out, 2-letter type + 14-digit length + payload)."""
import base64
import hashlib
import json
import os
import socket
import struct
from urllib.parse import urlparse

GUID = '258EAFA5-E914-47DA-95CA-C5AB0DC85B11'


class ChannelClosed(Exception):
    pass


class WebSocketChannel:
    def __init__(self, url, timeout=10):
        u = urlparse(url)
        if u.scheme != 'ws':
            raise ValueError('NNI_TUNER_COMMAND_CHANNEL must be a ws:// URL, got %r' % url)
        self.sock = socket.create_connection((u.hostname, u.port or 80), timeout=timeout)
        key = base64.b64encode(os.urandom(16)).decode()
        path = u.path or '/'
        req = ('GET %s HTTP/1.1\r\nHost: %s:%d\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n'
               'Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n\r\n') % (path, u.hostname, u.port or 80, key)
        self.sock.sendall(req.encode())
        head = b''
        while b'\r\n\r\n' not in head:
            chunk = self.sock.recv(4096)
            if not chunk:
                raise ChannelClosed('server closed the connection during the handshake')
            head += chunk
        head, self.buf = head.split(b'\r\n\r\n', 1)
        lines = head.decode('latin-1').split('\r\n')
        if ' 101 ' not in lines[0] + ' ':
            raise ConnectionError('WebSocket handshake refused: %s' % lines[0])
        headers = {}
        for line in lines[1:]:
            k, _, v = line.partition(':')
            headers[k.strip().lower()] = v.strip()
        want = base64.b64encode(hashlib.sha1((key + GUID).encode()).digest()).decode()
        if headers.get('sec-websocket-accept') != want:
            raise ConnectionError('bad Sec-WebSocket-Accept %r (want %r)' % (headers.get('sec-websocket-accept'), want))
        if 'websocket' not in headers.get('upgrade', '').lower():
            raise ConnectionError('handshake answer without Upgrade: websocket')
        self.sock.settimeout(None)

    def _recv_exact(self, n):
        while len(self.buf) < n:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ChannelClosed('connection closed')
            self.buf += chunk
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def _send_frame(self, opcode, payload):
        mask = os.urandom(4)
        n = len(payload)
        if n < 126:
            head = struct.pack('!BB', 0x80 | opcode, 0x80 | n)
        elif n < 65536:
            head = struct.pack('!BBH', 0x80 | opcode, 0x80 | 126, n)
        else:
            head = struct.pack('!BBQ', 0x80 | opcode, 0x80 | 127, n)
        masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
        self.sock.sendall(head + mask + masked)

    def send(self, command, content):
        self._send_frame(1, json.dumps({'type': command, 'content': content}).encode())

    def receive(self):
        """(type, content), or None when the server closed the channel."""
        message = b''
        try:
            while True:
                b0, b1 = self._recv_exact(2)
                opcode, fin = b0 & 0x0F, b0 & 0x80
                if b1 & 0x80:
                    raise ConnectionError('the server masked a frame')
                n = b1 & 0x7F
                if n == 126:
                    n = struct.unpack('!H', self._recv_exact(2))[0]
                elif n == 127:
                    n = struct.unpack('!Q', self._recv_exact(8))[0]
                payload = self._recv_exact(n)
                if opcode == 9:
                    self._send_frame(10, payload)
                elif opcode == 10:
                    pass
                elif opcode == 8:
                    try:
                        self._send_frame(8, payload[:2])
                    except OSError:
                        pass
                    return None
                else:
                    message += payload
                    if fin:
                        msg = json.loads(message.decode())
                        return msg['type'], msg.get('content') or ''
        except ChannelClosed:
            return None

    def close(self):
        try:
            self.send('_bye_', '')
            self._send_frame(8, struct.pack('!H', 4000))
        except OSError:
            pass
        self.sock.close()


class PipeChannel:
    def __init__(self):
        self.inp = os.fdopen(3, 'rb')
        self.out = os.fdopen(4, 'wb')

    def send(self, command, content):
        data = content.encode()
        self.out.write(command.encode() + b'%014d' % len(data) + data)
        self.out.flush()

    def receive(self):
        head = self.inp.read(16)
        if len(head) < 16:
            return None
        n = int(head[2:])
        data = self.inp.read(n)
        if len(data) < n:
            return None
        return head[:2].decode(), data.decode()

    def close(self):
        try:
            self.out.close()
        except OSError:
            pass


def connect():
    url = os.environ.get('NNI_TUNER_COMMAND_CHANNEL')
    return WebSocketChannel(url) if url else PipeChannel()
