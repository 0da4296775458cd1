"""HTTP_PROXY / HTTPS_PROXY / NO_PROXY: the sync and async clients and the topic stream reach
a real ``queues serve`` through a tiny forwarding + CONNECT proxy run by the test (and https
through a TLS front with a certificate made for the test)."""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import ssl
import subprocess
import tempfile
import threading
import unittest
from unittest import mock

from queues import AsyncClient, Client, PublishMessage
from queues._proxy import Proxy, proxy_for, tunnel

from . import server
from .server import unique


def _pipe(a: socket.socket, b: socket.socket) -> None:
    def one_way(src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                s.close()

    threading.Thread(target=one_way, args=(a, b), daemon=True).start()
    threading.Thread(target=one_way, args=(b, a), daemon=True).start()


class TinyProxy:
    """Forwards absolute-form requests and opens CONNECT tunnels, recording each request line
    and its Proxy-Authorization. After the first request a connection is a byte pipe (the
    service takes absolute-form request targets on a kept-alive connection)."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str | None]] = []
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def close(self) -> None:
        self.sock.close()

    def _accept(self) -> None:
        while True:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(c,), daemon=True).start()

    def _serve(self, c: socket.socket) -> None:
        head = b""
        while b"\r\n\r\n" not in head:
            data = c.recv(65536)
            if not data:
                c.close()
                return
            head += data
        line = head.split(b"\r\n", 1)[0].decode()
        method, target, _ = line.split(" ", 2)
        auth = next((h.split(b":", 1)[1].strip().decode() for h in head.split(b"\r\n")
                     if h.lower().startswith(b"proxy-authorization:")), None)
        self.seen.append((f"{method} {target}", auth))
        if method == "CONNECT":
            host, port = target.rsplit(":", 1)
            up = socket.create_connection((host, int(port)))
            c.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
            _pipe(c, up)
            return
        hostport = target.split("://", 1)[1].split("/", 1)[0]
        host, port = hostport.rsplit(":", 1)
        up = socket.create_connection((host, int(port)))
        up.sendall(head)
        _pipe(c, up)


def proxy_env(**env: str) -> mock._patch:
    clean = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy")}
    return mock.patch.dict(os.environ, {**clean, **env}, clear=True)


class ProxyTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        cls.srv = server.get()
        op = cls.srv.operator_client()
        p = op.create_project(unique("proxy"))
        cls.token = op.create_token(p.id, "all", ["*"]).token

    def setUp(self) -> None:
        self.proxy = TinyProxy()
        self.addCleanup(self.proxy.close)

    def test_http_proxy_forwards(self) -> None:
        with proxy_env(HTTP_PROXY=f"http://user:p%40ss@127.0.0.1:{self.proxy.port}"):
            c = Client(self.srv.url, self.token)
        name = unique("px")
        c.create_queue(name)
        c.send(name, "through")
        self.assertEqual([m.body for m in c.receive(name, wait_seconds=0)], ["through"])
        lines = [line for line, _ in self.proxy.seen]
        self.assertEqual(lines[0], f"POST {self.srv.url}/v1/queues")
        self.assertEqual(self.proxy.seen[0][1], "Basic dXNlcjpwQHNz")  # user:p@ss

    def test_no_proxy_bypasses(self) -> None:
        with proxy_env(http_proxy=f"http://127.0.0.1:{self.proxy.port}", no_proxy="localhost,127.0.0.1"):
            c = Client(self.srv.url, self.token)
        c.list_queues()
        self.assertEqual(self.proxy.seen, [])

    def test_async_client_through_the_proxy(self) -> None:
        async def run() -> None:
            async with AsyncClient(self.srv.url, self.token) as c:
                await c.list_queues()

        with proxy_env(HTTP_PROXY=f"127.0.0.1:{self.proxy.port}"):  # no scheme, as curl takes it
            client_env = dict(os.environ)
        with mock.patch.dict(os.environ, client_env, clear=True):
            asyncio.run(run())
        self.assertEqual([line for line, _ in self.proxy.seen], [f"GET {self.srv.url}/v1/queues"])

    def test_topic_stream_tunnels(self) -> None:
        with proxy_env(HTTP_PROXY=f"http://127.0.0.1:{self.proxy.port}"):
            c = Client(self.srv.url, self.token)
        t = c.create_topic(unique("pt")).name
        c.publish_batch(t, [PublishMessage("e1")]).raise_for_failed()
        with c.topic_stream(t, from_="earliest") as stream:
            ev = next(iter(stream))
        self.assertEqual(ev.entry.body, "e1")
        port = self.srv.url.rsplit(":", 1)[1]
        self.assertIn(f"CONNECT 127.0.0.1:{port}", [line for line, _ in self.proxy.seen])

    def test_https_through_a_connect_tunnel(self) -> None:
        if shutil.which("openssl") is None:
            self.skipTest("no openssl to make a certificate")
        tmp = tempfile.mkdtemp(prefix="queues-tls-")
        self.addCleanup(shutil.rmtree, tmp, True)
        key, cert = os.path.join(tmp, "k.pem"), os.path.join(tmp, "c.pem")
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", cert,
                        "-days", "1", "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost"],
                       check=True, capture_output=True)
        front = socket.create_server(("127.0.0.1", 0))
        self.addCleanup(front.close)
        tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        tls.load_cert_chain(cert, key)
        serve_port = int(self.srv.url.rsplit(":", 1)[1])

        def accept() -> None:  # a TLS front for the plain-HTTP serve
            while True:
                try:
                    raw, _ = front.accept()
                except OSError:
                    return
                try:
                    _pipe(tls.wrap_socket(raw, server_side=True), socket.create_connection(("127.0.0.1", serve_port)))
                except (OSError, ssl.SSLError):
                    raw.close()

        threading.Thread(target=accept, daemon=True).start()
        url = f"https://localhost:{front.getsockname()[1]}"
        with proxy_env(HTTPS_PROXY=f"http://127.0.0.1:{self.proxy.port}", HTTP_PROXY="http://127.0.0.1:9"):
            c = Client(url, self.token, ssl_context=ssl.create_default_context(cafile=cert))
        self.assertIsInstance(c.list_queues().items, list)
        self.assertEqual(self.proxy.seen[0][0], f"CONNECT localhost:{front.getsockname()[1]}")


class ProxyParsingTest(unittest.TestCase):
    """The two parsers of queues/_proxy.py on random and corrupted input: the environment's
    proxy URL (a Proxy or ValueError) and the proxy's CONNECT answer (nothing or OSError)."""

    def test_proxy_urls(self) -> None:
        cases = {"http://h:1": Proxy("h", 1), "h:2": Proxy("h", 2), "http://h": Proxy("h", 80),
                 "http://a%3Ab:c@h:3": Proxy("h", 3, "Basic YTpiOmM=")}
        for url, want in cases.items():
            with proxy_env(HTTPS_PROXY=url):
                self.assertEqual(proxy_for("https", "svc.test"), want, url)
        for url in ("https://h:1", "socks5://h:1", "http://:1"):
            with proxy_env(HTTPS_PROXY=url), self.assertRaises(ValueError, msg=url):
                proxy_for("https", "svc.test")
        import random
        rnd = random.Random(34)
        alphabet = "h:/@%[]1a?#. -9"
        for _ in range(500):
            url = "".join(rnd.choice(alphabet) for _ in range(rnd.randint(0, 20)))
            with proxy_env(HTTPS_PROXY=url):
                try:
                    p = proxy_for("https", "svc.test")
                except ValueError:
                    continue
                self.assertTrue(p is None or (p.host and 0 < p.port < 65536), url)

    def test_connect_answers(self) -> None:
        import random
        rnd = random.Random(34)
        good = b"HTTP/1.1 200 Connection established\r\nX: y\r\n\r\n"
        answers = [good, b"HTTP/1.1 407 Proxy Authentication Required\r\n\r\n", b"", b"HTTP/1.1\r\n\r\n",
                   b"x" * 20000]
        for _ in range(300):
            b = bytearray(good)
            for _ in range(rnd.randint(1, 4)):
                b[rnd.randrange(len(b))] = rnd.randrange(256)
            answers.append(bytes(b[:rnd.randint(0, len(b))]))
        a, b = socket.socketpair()
        with a, b:  # a 2xx head: the tunnel is open, and what follows the head is left unread
            a.settimeout(10)  # a tunnel reading past the head would wait for more: fail, not hang
            b.sendall(good + b"after")
            tunnel(a, "svc.test", 443, Proxy("p", 1))
            self.assertEqual(a.recv(16), b"after")
        for answer in answers:
            a, b = socket.socketpair()
            with a, b:
                b.sendall(answer + b"after")
                b.shutdown(socket.SHUT_WR)
                try:
                    tunnel(a, "svc.test", 443, Proxy("p", 1))
                except OSError:
                    continue
                self.assertEqual(a.recv(16), b"after", answer)  # nothing past the head consumed
                self.assertIn(b"\r\n\r\n", answer)


if __name__ == "__main__":
    unittest.main()
