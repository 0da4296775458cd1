"""A minimal RFC 6455 WebSocket client on the standard library, for the topic stream: the
HTTP/1.1 upgrade (Sec-WebSocket-Key, the Accept checked), masked client frames, text frames,
fragmented messages reassembled, ping answered with pong, close. No extensions and no
subprotocols (the service offers none), so the reserved bits must be 0."""

from __future__ import annotations

import base64
import hashlib
import os
import socket
import ssl
import struct
import urllib.parse
from typing import Callable

from ._http import Transport
from ._proxy import Proxy, tunnel
from .errors import QueuesError, TransportError

_GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
OP_CONT, OP_TEXT, OP_BINARY, OP_CLOSE, OP_PING, OP_PONG = 0x0, 0x1, 0x2, 0x8, 0x9, 0xA
_DATA = (OP_TEXT, OP_BINARY)
_CONTROL = (OP_CLOSE, OP_PING, OP_PONG)

# A message bigger than this is refused (1009): a topic stream frame holds under 2 MiB of
# payload (1 MiB, plus the entry that crosses it), escaped JSON at most sextuples it, and the
# entries' fields add little.
MAX_MESSAGE = 32 << 20


class WebSocketError(TransportError):
    """The connection broke the protocol, or dropped (code ``transport``): a passing failure;
    ``close_code`` is the status the client closed with (1006: none, the connection is gone)."""

    def __init__(self, message: str, close_code: int = 1002) -> None:
        super().__init__(message)
        self.close_code = close_code


class ConnectionClosed(WebSocketError):
    """The peer closed the connection: ``close_code`` is its close status (1005: none given),
    ``reason`` its reason."""

    def __init__(self, code: int, reason: str) -> None:
        super().__init__(f"queues: the WebSocket closed ({code} {reason})".strip(), code)
        self.reason = reason


def accept_key(key: str) -> str:
    """The Sec-WebSocket-Accept a server answers to key (RFC 6455 §4.2.2)."""
    return base64.b64encode(hashlib.sha1(key.encode() + _GUID).digest()).decode()


def encode_frame(opcode: int, payload: bytes, *, fin: bool = True, mask: bytes | None = None) -> bytes:
    """One frame; a client's is masked (mask: 4 bytes, random when None)."""
    mask = os.urandom(4) if mask is None else mask
    head = bytes([(0x80 if fin else 0) | opcode])
    n = len(payload)
    if n < 126:
        head += bytes([0x80 | n])
    elif n < 1 << 16:
        head += bytes([0x80 | 126]) + struct.pack("!H", n)
    else:
        head += bytes([0x80 | 127]) + struct.pack("!Q", n)
    return head + mask + _mask(payload, mask)


def _mask(data: bytes, mask: bytes) -> bytes:
    if not data:
        return data
    # XOR by whole machine words: a byte loop is slow for 1 MiB frames.
    n = len(data)
    k = int.from_bytes((mask * (n // 4 + 1))[:n], "big")
    return (int.from_bytes(data, "big") ^ k).to_bytes(n, "big")


class WebSocket:
    """One client connection. ``recv`` returns the next text message (answering pings on the
    way); ``send_text`` and ``close`` write. For one thread at a time."""

    def __init__(self, sock: socket.socket, leftover: bytes = b"") -> None:
        self._sock = sock
        self._buf = bytearray(leftover)
        self.closed = False

    # Reading.

    def _read(self, n: int) -> bytes:
        while len(self._buf) < n:
            try:
                chunk = self._sock.recv(max(65536, n - len(self._buf)))
            except socket.timeout as e:
                raise WebSocketError("queues: the WebSocket was silent past the read timeout", 1006) from e
            except OSError as e:
                raise WebSocketError(f"queues: the WebSocket dropped: {e!r}", 1006) from e
            if not chunk:
                raise WebSocketError("queues: the WebSocket dropped (end of stream)", 1006)
            self._buf += chunk
        out = bytes(self._buf[:n])
        del self._buf[:n]
        return out

    def read_frame(self) -> tuple[bool, int, bytes]:
        """The next frame as (fin, opcode, payload), checked against RFC 6455 §5."""
        b0, b1 = self._read(2)
        fin, rsv, opcode = bool(b0 & 0x80), b0 & 0x70, b0 & 0x0F
        if rsv:
            raise WebSocketError("queues: a WebSocket frame with reserved bits set (no extension was agreed)")
        if opcode not in _DATA + _CONTROL + (OP_CONT,):
            raise WebSocketError(f"queues: a WebSocket frame of unknown opcode {opcode:#x}")
        if b1 & 0x80:
            raise WebSocketError("queues: a masked WebSocket frame from the server")
        n = b1 & 0x7F
        if n == 126:
            n = struct.unpack("!H", self._read(2))[0]
        elif n == 127:
            n = struct.unpack("!Q", self._read(8))[0]
            if n >> 63:
                raise WebSocketError("queues: a WebSocket frame length with its top bit set")
        if opcode in _CONTROL and (n > 125 or not fin):
            raise WebSocketError("queues: a WebSocket control frame fragmented or over 125 bytes")
        if n > MAX_MESSAGE:
            raise WebSocketError(f"queues: a WebSocket frame of {n} bytes, over the limit", 1009)
        return fin, opcode, self._read(n)

    def recv(self) -> str:
        """The next text message, fragments reassembled; pings are answered, pongs ignored.
        A close frame is answered and raises ConnectionClosed; a protocol error closes with
        its status and raises WebSocketError."""
        try:
            return self._recv()
        except ConnectionClosed:
            raise
        except WebSocketError as e:
            if e.close_code != 1006:
                self._fail(e.close_code)
            else:
                self.abort()
            raise

    def _recv(self) -> str:
        parts: list[bytes] = []
        opcode = None
        size = 0
        while True:
            fin, op, payload = self.read_frame()
            if op == OP_PING:
                self._send(OP_PONG, payload)
                continue
            if op == OP_PONG:
                continue
            if op == OP_CLOSE:
                self._closed_by_peer(payload)
            if op == OP_CONT:
                if opcode is None:
                    raise WebSocketError("queues: a WebSocket continuation frame without a message to continue")
            elif opcode is not None:
                raise WebSocketError("queues: a new WebSocket message inside a fragmented one")
            else:
                opcode = op
            size += len(payload)
            if size > MAX_MESSAGE:
                raise WebSocketError("queues: a WebSocket message over the limit", 1009)
            parts.append(payload)
            if fin:
                break
        data = b"".join(parts)
        if opcode == OP_BINARY:
            raise WebSocketError("queues: a binary WebSocket message (the stream sends text)", 1003)
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as e:
            raise WebSocketError("queues: a WebSocket text message that is not UTF-8", 1007) from e

    def _closed_by_peer(self, payload: bytes) -> None:
        if len(payload) == 1:
            raise WebSocketError("queues: a WebSocket close frame of one byte")
        code, reason = 1005, ""
        if len(payload) >= 2:
            code = struct.unpack("!H", payload[:2])[0]
            try:
                reason = payload[2:].decode("utf-8")
            except UnicodeDecodeError as e:
                raise WebSocketError("queues: a WebSocket close reason that is not UTF-8", 1007) from e
        if not self.closed:
            try:
                self._send(OP_CLOSE, payload[:2])
            except WebSocketError:
                pass
        self.abort()
        raise ConnectionClosed(code, reason)

    # Writing.

    def _send(self, opcode: int, payload: bytes) -> None:
        try:
            self._sock.sendall(encode_frame(opcode, payload))
        except OSError as e:
            raise WebSocketError(f"queues: writing to the WebSocket: {e!r}", 1006) from e

    def send_text(self, text: str) -> None:
        if self.closed:
            raise WebSocketError("queues: the WebSocket is closed", 1006)
        self._send(OP_TEXT, text.encode("utf-8"))

    def _fail(self, code: int) -> None:
        try:
            self._send(OP_CLOSE, struct.pack("!H", code))
        except WebSocketError:
            pass
        self.abort()

    def close(self, code: int = 1000) -> None:
        """Sends a close frame and shuts the connection (without waiting for the answer: the
        stream has nothing more to read)."""
        if not self.closed:
            self._fail(code)

    def abort(self) -> None:
        """Shuts the connection at once; a recv blocked in another thread returns (a close
        alone does not wake it)."""
        self.closed = True
        try:
            self._sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        try:
            self._sock.close()
        except OSError:
            pass


def connect(url: str, headers: dict[str, str], *, timeout: float, read_timeout: float | None,
            ssl_context: ssl.SSLContext | None = None,
            on_socket: Callable[[socket.socket], None] | None = None, proxy: Proxy | None = None) -> WebSocket:
    """Opens a WebSocket to url (http(s):// or ws(s)://). A refusal (any answer but 101)
    raises the answer's QueuesError, as a request's would. With ``proxy`` (the client's, from
    the environment when it was made) the connection is a CONNECT tunnel through it."""
    u = urllib.parse.urlsplit(url)
    secure = u.scheme in ("https", "wss")
    host, port = u.hostname or "", u.port or (443 if secure else 80)
    p = proxy
    try:
        if p is None:
            sock = socket.create_connection((host, port), timeout=timeout)
        else:  # a WebSocket through a proxy is a CONNECT tunnel, whatever the scheme
            sock = socket.create_connection((p.host, p.port), timeout=timeout)
            try:
                tunnel(sock, host, port, p)
            except OSError:
                sock.close()
                raise
        if secure:
            sock = (ssl_context or ssl.create_default_context()).wrap_socket(sock, server_hostname=host)
    except OSError as e:
        raise WebSocketError(f"queues: connecting to {host}:{port}: {e!r}", 1006) from e
    if on_socket is not None:
        on_socket(sock)
    try:
        key = base64.b64encode(os.urandom(16)).decode()
        target = (u.path or "/") + ("?" + u.query if u.query else "")
        lines = [f"GET {target} HTTP/1.1", f"Host: {u.netloc}", "Upgrade: websocket", "Connection: Upgrade",
                 f"Sec-WebSocket-Key: {key}", "Sec-WebSocket-Version: 13"]
        lines += [f"{k}: {v}" for k, v in headers.items()]
        sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))
        status, head, rest = _read_head(sock)
        if status != 101:
            _refused(sock, status, head, rest)
        if head.get("upgrade", "").lower() != "websocket" or "upgrade" not in head.get("connection", "").lower():
            raise WebSocketError("queues: the server's 101 lacks Upgrade: websocket")
        if head.get("sec-websocket-accept") != accept_key(key):
            raise WebSocketError("queues: the server's Sec-WebSocket-Accept does not match the key")
        sock.settimeout(read_timeout)
        return WebSocket(sock, rest)
    except BaseException:
        sock.close()
        raise


def _read_head(sock: socket.socket) -> tuple[int, dict[str, str], bytes]:
    buf = b""
    while b"\r\n\r\n" not in buf:
        try:
            chunk = sock.recv(4096)
        except OSError as e:
            raise WebSocketError(f"queues: reading the upgrade's answer: {e!r}", 1006) from e
        if not chunk:
            raise WebSocketError("queues: the connection ended before the upgrade's answer", 1006)
        buf += chunk
        if len(buf) > 64 << 10:
            raise WebSocketError("queues: the upgrade's answer has over 64 KiB of headers")
    raw, rest = buf.split(b"\r\n\r\n", 1)
    lines = raw.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ", 2)
    if len(parts) < 2 or not parts[0].startswith("HTTP/1.") or not parts[1].isdigit():
        raise WebSocketError(f"queues: not an HTTP answer to the upgrade: {lines[0][:80]!r}")
    head: dict[str, str] = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        head[name.strip().lower()] = value.strip()
    return int(parts[1]), head, rest


class _Answer:
    """What Transport._decode reads of an answer."""

    def __init__(self, status: int, head: dict[str, str]) -> None:
        self.status = status
        self._head = head

    def getheader(self, name: str, default: str | None = None) -> str | None:
        return self._head.get(name.lower(), default)


def _refused(sock: socket.socket, status: int, head: dict[str, str], body: bytes) -> None:
    """Raises the QueuesError of a refused upgrade, its body read by Content-Length."""
    n = int(head.get("content-length", "0") or 0) if head.get("content-length", "").isdigit() else 0
    while len(body) < min(n, 1 << 20):
        try:
            chunk = sock.recv(65536)
        except OSError:
            break
        if not chunk:
            break
        body += chunk
    Transport._decode("GET", "stream", _Answer(status, head), body)  # type: ignore[arg-type]
    raise QueuesError("internal", f"queues: the upgrade was answered {status}", status=status)
