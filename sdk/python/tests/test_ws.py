"""queues/_ws.py, the standard-library WebSocket client, against a scripted server end of a
socket pair and a scripted upgrade: frames, masking, fragments, control frames, close, the
handshake's checks, and random and malformed frames (which must end in WebSocketError, never
hang or raise anything else)."""

from __future__ import annotations

import base64
import hashlib
import random
import socket
import struct
import threading
import unittest

from queues import QueuesError
from queues._ws import (MAX_MESSAGE, OP_BINARY, OP_CLOSE, OP_CONT, OP_PING, OP_PONG, OP_TEXT, ConnectionClosed,
                        WebSocket, WebSocketError, accept_key, connect, encode_frame)


def server_frame(opcode: int, payload: bytes, *, fin: bool = True, rsv: int = 0, masked: bool = False,
                 length: int | None = None) -> bytes:
    """A frame as a server writes it (unmasked), or broken as asked."""
    n = len(payload) if length is None else length
    head = bytes([(0x80 if fin else 0) | rsv | opcode])
    m = 0x80 if masked else 0
    if n < 126:
        head += bytes([m | n])
    elif n < 1 << 16:
        head += bytes([m | 126]) + struct.pack("!H", n)
    else:
        head += bytes([m | 127]) + struct.pack("!Q", n)
    return head + (b"\0\0\0\0" if masked else b"") + payload


def read_client_frame(s: socket.socket) -> tuple[int, bytes]:
    """Reads one client frame from the server end, checking it is masked; (opcode, payload)."""
    def read(n: int) -> bytes:
        b = b""
        while len(b) < n:
            chunk = s.recv(n - len(b))
            assert chunk, "the client closed"
            b += chunk
        return b
    b0, b1 = read(2)
    assert b1 & 0x80, "a client frame must be masked"
    n = b1 & 0x7F
    if n == 126:
        n = struct.unpack("!H", read(2))[0]
    elif n == 127:
        n = struct.unpack("!Q", read(8))[0]
    mask = read(4)
    data = bytes(c ^ mask[i % 4] for i, c in enumerate(read(n)))
    return b0 & 0x0F, data


class FramingTest(unittest.TestCase):
    def pair(self) -> tuple[WebSocket, socket.socket]:
        a, b = socket.socketpair()
        a.settimeout(5)
        b.settimeout(5)
        self.addCleanup(a.close)
        self.addCleanup(b.close)
        return WebSocket(a), b

    def test_accept_key(self) -> None:
        # RFC 6455 §1.3's example.
        self.assertEqual(accept_key("dGhlIHNhbXBsZSBub25jZQ=="), "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=")

    def test_client_frames_are_masked_with_every_length_form(self) -> None:
        ws, srv = self.pair()
        for n in (0, 125, 126, 65535, 65536, 200_000):
            text = "é" * (n // 2) + "x" * (n % 2)
            t = threading.Thread(target=ws.send_text, args=(text,))
            t.start()
            op, data = read_client_frame(srv)
            t.join()
            self.assertEqual((op, data.decode()), (OP_TEXT, text))
        self.assertEqual(encode_frame(OP_TEXT, b"ab", mask=b"\x01\x02\x03\x04"), b"\x81\x82\x01\x02\x03\x04" + bytes([ord("a") ^ 1, ord("b") ^ 2]))

    def test_text_and_fragments_with_control_frames_between(self) -> None:
        ws, srv = self.pair()
        srv.sendall(server_frame(OP_TEXT, b'{"a":1}'))
        self.assertEqual(ws.recv(), '{"a":1}')
        big = ("ü" * 70_000).encode()
        srv.sendall(server_frame(OP_TEXT, big[:3], fin=False) + server_frame(OP_PING, b"hi")
                    + server_frame(OP_CONT, big[3:100_001], fin=False) + server_frame(OP_PONG, b"")
                    + server_frame(OP_CONT, big[100_001:]))
        self.assertEqual(ws.recv(), "ü" * 70_000)  # a multibyte character split across fragments
        self.assertEqual(read_client_frame(srv), (OP_PONG, b"hi"))

    def test_close_is_answered_and_raised(self) -> None:
        ws, srv = self.pair()
        srv.sendall(server_frame(OP_CLOSE, struct.pack("!H", 1001) + b"draining"))
        with self.assertRaises(ConnectionClosed) as cm:
            ws.recv()
        self.assertEqual((cm.exception.close_code, cm.exception.reason, cm.exception.code), (1001, "draining", "transport"))
        self.assertEqual(read_client_frame(srv), (OP_CLOSE, struct.pack("!H", 1001)))
        self.assertTrue(ws.closed)
        with self.assertRaises(WebSocketError):
            ws.send_text("after")

    def test_a_drop_is_a_websocket_error(self) -> None:
        ws, srv = self.pair()
        srv.sendall(server_frame(OP_TEXT, b"abcdef")[:4])
        srv.close()
        with self.assertRaises(WebSocketError) as cm:
            ws.recv()
        self.assertEqual(cm.exception.close_code, 1006)

    def test_bad_frames(self) -> None:
        cases = {  # name: (frames, the close status the client must answer)
            "reserved bits": (server_frame(OP_TEXT, b"x", rsv=0x40), 1002),
            "unknown opcode": (server_frame(0x3, b"x"), 1002),
            "masked from the server": (server_frame(OP_TEXT, b"x", masked=True), 1002),
            "fragmented control": (server_frame(OP_PING, b"x", fin=False), 1002),
            "control over 125": (server_frame(OP_PING, b"x" * 126), 1002),
            "continuation first": (server_frame(OP_CONT, b"x"), 1002),
            "new message mid-fragments": (server_frame(OP_TEXT, b"x", fin=False) + server_frame(OP_TEXT, b"y"), 1002),
            "not UTF-8": (server_frame(OP_TEXT, b"\xff\xfe"), 1007),
            "binary": (server_frame(OP_BINARY, b"x"), 1003),
            "length top bit": (b"\x81\x7f" + struct.pack("!Q", 1 << 63), 1002),
            "over the limit": (server_frame(OP_TEXT, b"", length=MAX_MESSAGE + 1), 1009),
            "one-byte close": (server_frame(OP_CLOSE, b"\x03"), 1002),
            "close reason not UTF-8": (server_frame(OP_CLOSE, b"\x03\xe8\xff"), 1007),
        }
        for name, (data, status) in cases.items():
            with self.subTest(name):
                ws, srv = self.pair()
                srv.sendall(data)
                with self.assertRaises(WebSocketError) as cm:
                    ws.recv()
                self.assertNotIsInstance(cm.exception, ConnectionClosed)
                self.assertEqual(cm.exception.close_code, status, str(cm.exception))
                self.assertTrue(ws.closed, "a protocol error closes the connection")
                self.assertEqual(read_client_frame(srv), (OP_CLOSE, struct.pack("!H", status)))

    def test_random_frames_never_hang_or_escape(self) -> None:
        """Random bytes, and valid frames with random corruption: each recv returns text or
        raises WebSocketError (the peer then closed, so nothing waits for more)."""
        rnd = random.Random(6455)
        good = server_frame(OP_TEXT, b'{"messages":[]}') + server_frame(OP_PING, b"p")
        for i in range(400):
            if i % 2:
                data = bytes(rnd.randrange(256) for _ in range(rnd.randrange(1, 40)))
            else:
                data = bytearray(good)
                for _ in range(rnd.randrange(1, 4)):
                    data[rnd.randrange(len(data))] = rnd.randrange(256)
                data = bytes(data)
            ws, srv = self.pair()
            srv.sendall(data)
            srv.shutdown(socket.SHUT_WR)
            try:
                while True:
                    self.assertIsInstance(ws.recv(), str)
            except WebSocketError:
                pass
            except Exception as e:  # noqa: BLE001
                self.fail(f"{data!r}: {e!r}")
            ws.abort()


class HandshakeTest(unittest.TestCase):
    def serve(self, answer: callable) -> str:  # type: ignore[valid-type]
        """A one-connection server answering the upgrade with answer(key); its URL."""
        ln = socket.create_server(("127.0.0.1", 0))
        self.addCleanup(ln.close)
        self.request = b""

        def run() -> None:
            conn, _ = ln.accept()
            with conn:
                buf = b""
                while b"\r\n\r\n" not in buf:
                    buf += conn.recv(4096)
                self.request = buf
                key = [line.split(b":", 1)[1].strip() for line in buf.split(b"\r\n") if line.lower().startswith(b"sec-websocket-key:")][0]
                conn.sendall(answer(key.decode()))
                conn.recv(1024)  # until the client closes

        threading.Thread(target=run, daemon=True).start()
        return f"http://127.0.0.1:{ln.getsockname()[1]}/v1/topics/t/stream?from=1"

    def test_upgrade_and_a_frame_with_the_answer(self) -> None:
        url = self.serve(lambda k: ("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                                    f"Sec-WebSocket-Accept: {accept_key(k)}\r\n\r\n").encode() + server_frame(OP_TEXT, b"first"))
        ws = connect(url, {"Authorization": "Bearer t"}, timeout=5, read_timeout=5)
        self.assertEqual(ws.recv(), "first")  # sent with the 101: kept, not lost
        ws.close()
        req = self.request.decode()
        self.assertTrue(req.startswith("GET /v1/topics/t/stream?from=1 HTTP/1.1\r\n"), req)
        self.assertIn("Authorization: Bearer t\r\n", req)
        key = [line.split(":", 1)[1].strip() for line in req.split("\r\n") if line.startswith("Sec-WebSocket-Key")][0]
        self.assertEqual(len(base64.b64decode(key)), 16)

    def test_a_wrong_accept_is_refused(self) -> None:
        bad = base64.b64encode(hashlib.sha1(b"other").digest()).decode()
        url = self.serve(lambda k: ("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                                    f"Sec-WebSocket-Accept: {bad}\r\n\r\n").encode())
        with self.assertRaises(WebSocketError) as cm:
            connect(url, {}, timeout=5, read_timeout=5)
        self.assertIn("Accept", str(cm.exception))

    def test_a_refusal_is_the_answers_error(self) -> None:
        body = b'{"error":{"code":"rate_limited","message":"too many streams","details":{"limit":"streamsPerProject"}}}'
        url = self.serve(lambda k: b"HTTP/1.1 429 Too Many Requests\r\nContent-Type: application/json\r\nRetry-After: 5\r\n"
                         + f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
        with self.assertRaises(QueuesError) as cm:
            connect(url, {}, timeout=5, read_timeout=5)
        e = cm.exception
        self.assertEqual((e.code, e.status, e.retry_after, e.details["limit"]), ("rate_limited", 429, 5.0, "streamsPerProject"))


if __name__ == "__main__":
    unittest.main()


class ScriptedStreamTest(unittest.TestCase):
    """TopicStream against a scripted service: each connection's script of frames, and the
    query each reconnect asks with."""

    def test_reconnects_on_passing_ends_and_stops_at_final_errors(self) -> None:
        from queues import Client
        scripts = [
            [server_frame(OP_TEXT, b'{"messages":[{"sequence":5,"body":"a"},{"sequence":6,"body":"b"}]}'),
             server_frame(OP_CLOSE, struct.pack("!H", 1001) + b"draining")],
            [server_frame(OP_TEXT, b'{"gap":{"from":7,"firstSequence":9}}'),
             server_frame(OP_TEXT, b'{"error":{"code":"idle","message":"no credit for 60 s"}}'),
             server_frame(OP_CLOSE, struct.pack("!H", 1008))],
            [server_frame(OP_TEXT, b'{"messages":[{"sequence":9,"body":"c","key":"k","delta":true}]}'),
             server_frame(OP_TEXT, b'{"error":{"code":"not_found","message":"the topic was deleted"}}')],
        ]
        ln = socket.create_server(("127.0.0.1", 0))
        self.addCleanup(ln.close)
        asked: list[str] = []
        credits: list[bytes] = []

        def run() -> None:
            for script in scripts:
                conn, _ = ln.accept()
                with conn:
                    buf = b""
                    while b"\r\n\r\n" not in buf:
                        buf += conn.recv(4096)
                    asked.append(buf.split(b" ")[1].decode())
                    key = [line.split(b":", 1)[1].strip() for line in buf.split(b"\r\n")
                           if line.lower().startswith(b"sec-websocket-key:")][0].decode()
                    conn.sendall(("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                                  f"Sec-WebSocket-Accept: {accept_key(key)}\r\n\r\n").encode())
                    credits.append(read_client_frame(conn)[1])
                    conn.sendall(b"".join(script))
                    try:
                        while conn.recv(1024):
                            pass
                    except OSError:
                        pass

        threading.Thread(target=run, daemon=True).start()
        c = Client(f"http://127.0.0.1:{ln.getsockname()[1]}", "t")
        s = c.topic_stream("prices", from_=5, window=10, filter={"region": "eu"})
        got = []
        with self.assertRaises(QueuesError) as cm:
            for ev in s:
                got.append(f"{ev.entry.sequence}:{ev.entry.body}:{ev.entry.delta}" if ev.entry else
                           f"gap {ev.gap.from_}-{ev.gap.first_sequence}")
        self.assertEqual(cm.exception.code, "not_found")
        self.assertEqual(got, ["5:a:False", "6:b:False", "gap 7-9", "9:c:True"])
        self.assertEqual(asked, ["/v1/topics/prices/stream?from=5&attribute.region=eu",
                                 "/v1/topics/prices/stream?from=7&attribute.region=eu",  # after the drain: the bookmark
                                 "/v1/topics/prices/stream?from=9&attribute.region=eu"])  # after idle: past the gap
        self.assertEqual(credits, [b'{"credit": 10}'] * 3)
