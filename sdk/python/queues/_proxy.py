"""Outbound proxies from the environment: HTTPS_PROXY, HTTP_PROXY and NO_PROXY (either case),
as curl and urllib read them. An https:// URL goes through a CONNECT tunnel (TLS end to end
with the service); an http:// URL is forwarded (the request line carries the absolute URL),
and the WebSocket streams tunnel with CONNECT whatever their scheme."""

from __future__ import annotations

import base64
import socket
import urllib.parse
import urllib.request
from dataclasses import dataclass


@dataclass(frozen=True)
class Proxy:
    """A proxy to reach the service through: an http:// proxy's host and port, and the
    Proxy-Authorization header its URL's user:password ask for."""

    host: str
    port: int
    authorization: str | None = None

    def headers(self) -> dict[str, str]:
        return {"Proxy-Authorization": self.authorization} if self.authorization else {}


def proxy_for(scheme: str, host: str) -> Proxy | None:
    """The proxy the environment names for a URL of ``scheme`` on ``host``, or None (none
    set, or NO_PROXY lists the host). Read when a client is made, not per request."""
    # Both are in urllib.request (not in its __all__, so typeshed leaves them out).
    proxies = urllib.request.getproxies_environment()  # type: ignore[attr-defined]
    if not proxies or urllib.request.proxy_bypass_environment(host, proxies):  # type: ignore[attr-defined]
        return None
    url = proxies.get(scheme)
    if not url:
        return None
    if "://" not in url:
        url = "http://" + url  # HTTPS_PROXY=proxy:3128, as curl takes it
    u = urllib.parse.urlsplit(url)
    if u.scheme != "http" or not u.hostname:
        raise ValueError(f"queues: {scheme}_proxy {url!r}: want http://[user:password@]host[:port]")
    auth = None
    if u.username is not None:
        cred = urllib.parse.unquote(u.username) + ":" + urllib.parse.unquote(u.password or "")
        auth = "Basic " + base64.b64encode(cred.encode()).decode()
    return Proxy(u.hostname, u.port or 80, auth)


def tunnel(sock: socket.socket, host: str, port: int, proxy: Proxy) -> None:
    """Asks the proxy on ``sock`` for a CONNECT tunnel to host:port; raises OSError unless it
    answers 2xx. Reads the answer byte by byte, so nothing after its head is consumed."""
    target = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    lines = [f"CONNECT {target} HTTP/1.1", f"Host: {target}"] + [f"{k}: {v}" for k, v in proxy.headers().items()]
    sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))
    head = b""
    while not head.endswith(b"\r\n\r\n"):
        b = sock.recv(1)
        if not b:
            raise OSError("the proxy closed the connection during CONNECT")
        head += b
        if len(head) > 16384:
            raise OSError("the proxy's CONNECT answer is too long")
    first = head.split(b"\r\n", 1)[0]
    status = first.split()
    if len(status) < 2 or not status[1].startswith(b"2"):
        raise OSError(f"the proxy refused CONNECT {target}: {first.decode('latin-1')}")
