"""The HTTP core: kept-alive connections per thread, JSON in and out, error answers as
QueuesError, and retries of 429 rate_limited / 503 unavailable honouring Retry-After."""

from __future__ import annotations

import email.utils
import http.client
import json
import random
import ssl
import threading
import time
import urllib.parse
from dataclasses import dataclass
from typing import Any, Callable

from . import tracing
from ._proxy import Proxy, proxy_for
from .errors import QueuesError, TransportError

# Failures of a kept-alive connection that the server closed while it sat idle: the request
# never reached it, so it is sent again once on a new connection.
_STALE_CONNECTION = (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError,
                     http.client.CannotSendRequest, http.client.BadStatusLine)


@dataclass(frozen=True)
class RetryPolicy:
    """How calls answered 429 ``rate_limited`` or 503 ``unavailable`` are retried. Other
    errors (``purge_too_soon`` included) raise at once. A GET that fails to connect is
    retried too; other requests are not, since the server may have acted on them.

    ``max_attempts`` counts every attempt (1 disables retries); the backoff starts at
    ``min_backoff`` seconds and doubles, with jitter, up to ``max_backoff``; an answer whose
    Retry-After asks for more than ``max_retry_after`` seconds is raised instead.
    """

    max_attempts: int = 4
    min_backoff: float = 0.1
    max_backoff: float = 5.0
    max_retry_after: float = 30.0


def parse_retry_after(v: str | None) -> float | None:
    """Retry-After as seconds: delta-seconds or an HTTP date."""
    if not v:
        return None
    v = v.strip()
    if v.isdigit():
        return float(v)
    try:
        t = email.utils.parsedate_to_datetime(v)
    except (TypeError, ValueError):
        return None
    return max(t.timestamp() - time.time(), 0.0)


class _Holder:
    """Holds a thread's connection and closes it when the thread ends (its locals go)."""

    __slots__ = ("conn",)

    def __init__(self, conn: http.client.HTTPConnection) -> None:
        self.conn = conn

    def __del__(self) -> None:
        self.conn.close()


class Transport:
    """Sends requests to one base URL over connections kept per thread."""

    def __init__(self, base_url: str, token: str | None, timeout: float, retry: RetryPolicy,
                 user_agent: str, ssl_context: ssl.SSLContext | None = None) -> None:
        u = urllib.parse.urlsplit(base_url.rstrip("/"))
        if u.scheme not in ("http", "https") or not u.hostname:
            raise ValueError(f"queues: bad URL {base_url!r}: want http(s)://host[:port]")
        self.base_url = base_url.rstrip("/")
        self._scheme, self._host = u.scheme, u.hostname
        self._port = u.port or (443 if u.scheme == "https" else 80)
        self._prefix = u.path
        self.token = token
        self.timeout = timeout
        self.retry = retry
        self.user_agent = user_agent
        self._ssl = ssl_context
        self._local = threading.local()
        # HTTPS_PROXY / HTTP_PROXY / NO_PROXY, read once (queues/_proxy.py).
        self.proxy: Proxy | None = proxy_for(self._scheme, self._host)
        # Through a forwarding proxy (http://) the request line names the absolute URL.
        self._origin = f"http://{u.netloc}" if self.proxy is not None and self._scheme == "http" else ""

    @property
    def ssl_context(self) -> ssl.SSLContext | None:
        return self._ssl

    def _conn(self, timeout: float) -> tuple[http.client.HTTPConnection, bool]:
        holder = getattr(self._local, "holder", None)
        c = holder.conn if holder is not None else None
        if c is not None:
            c.timeout = timeout
            if c.sock is not None:
                c.sock.settimeout(timeout)
            return c, True
        p = self.proxy
        if self._scheme == "https":
            ctx = self._ssl or ssl.create_default_context()
            if p is not None:  # TLS with the service inside the proxy's CONNECT tunnel
                c = http.client.HTTPSConnection(p.host, p.port, timeout=timeout, context=ctx)
                c.set_tunnel(self._host, self._port, headers=p.headers())
            else:
                c = http.client.HTTPSConnection(self._host, self._port, timeout=timeout, context=ctx)
        elif p is not None:
            c = http.client.HTTPConnection(p.host, p.port, timeout=timeout)
        else:
            c = http.client.HTTPConnection(self._host, self._port, timeout=timeout)
        self._local.holder = _Holder(c)
        return c, False

    def _drop(self) -> None:
        holder = getattr(self._local, "holder", None)
        if holder is not None:
            holder.conn.close()
            self._local.holder = None

    def close(self) -> None:
        """Closes this thread's connection (others close with their threads)."""
        self._drop()

    def request(self, method: str, path: str, query: dict[str, Any] | None = None,
                body: Any = None, *, timeout: float | None = None, auth: bool = True,
                hook: Callable[[http.client.HTTPConnection], None] | None = None) -> tuple[int, Any]:
        """Calls the route and returns (status, decoded JSON or None), retrying as the
        policy says; an error answer raises QueuesError, no answer TransportError. ``hook``
        is called with the connection before each send (a consumer keeps its long polls'
        connections, to shut them at stop); an exception it raises ends the call."""
        url = self._origin + self._prefix + path
        if query:
            q = {k: v for k, v in query.items() if v is not None}
            if q:
                url += "?" + urllib.parse.urlencode(q, doseq=True)  # a list: the name once per value
        data = None if body is None else json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode()
        headers = {"Accept": "application/json", "User-Agent": self.user_agent}
        if data is not None:
            headers["Content-Type"] = "application/json"
        if auth and self.token:
            headers["Authorization"] = "Bearer " + self.token
        if self._origin and self.proxy is not None:
            headers.update(self.proxy.headers())
        tracing.inject(headers)
        attempt = 0
        while True:
            attempt += 1
            try:
                return self._once(method, url, data, headers, timeout or self.timeout, hook)
            except QueuesError as e:
                wait = self._retryable(method, attempt, e)
                if wait is None:
                    raise
                time.sleep(wait)

    def _retryable(self, method: str, attempt: int, e: QueuesError) -> float | None:
        if attempt >= self.retry.max_attempts:
            return None
        if isinstance(e, TransportError):
            if method != "GET":
                return None
        elif e.code not in ("rate_limited", "unavailable"):
            return None
        ra = e.retry_after or 0.0
        if ra > self.retry.max_retry_after:
            return None
        backoff = min(self.retry.min_backoff * (2 ** (attempt - 1)), self.retry.max_backoff)
        # Jitter in [backoff/2, backoff], so clients told to wait do not come back together.
        return max(backoff / 2 + random.uniform(0, backoff / 2), ra)

    def _once(self, method: str, url: str, data: bytes | None, headers: dict[str, str],
              timeout: float, hook: Callable[[http.client.HTTPConnection], None] | None) -> tuple[int, Any]:
        for fresh_try in (False, True):
            conn, reused = self._conn(timeout)
            if hook is not None:
                hook(conn)
            try:
                conn.request(method, url, body=data, headers=headers)
                resp = conn.getresponse()
                raw = resp.read()
                break
            except _STALE_CONNECTION as e:
                self._drop()
                if reused and not fresh_try:
                    continue
                raise TransportError(f"queues: {method} {url}: {e!r}", e) from e
            except (OSError, http.client.HTTPException) as e:
                self._drop()
                raise TransportError(f"queues: {method} {url}: {e!r}", e) from e
        if resp.getheader("Connection", "").lower() == "close":
            self._drop()
        return resp.status, self._decode(method, url, resp, raw)

    @staticmethod
    def _decode(method: str, url: str, resp: http.client.HTTPResponse, raw: bytes) -> Any:
        ctype = resp.getheader("Content-Type", "")
        value = None
        if raw and "json" in ctype:
            try:
                value = json.loads(raw)
            except ValueError:
                value = None
        if resp.status < 300:
            if raw and value is None and "json" in ctype:
                raise QueuesError("internal", f"{method} {url}: the answer is not JSON", status=resp.status)
            return value
        retry_after = parse_retry_after(resp.getheader("Retry-After"))
        request_id = resp.getheader("X-Request-Id")
        if isinstance(value, dict) and isinstance(value.get("error"), dict):
            return _raise(QueuesError.from_body(value["error"], resp.status, retry_after=retry_after,
                                                request_id=request_id))
        text = raw[:200].decode("utf-8", "replace")
        raise QueuesError(_code_for(resp.status), f"HTTP {resp.status}: {text}".strip(), status=resp.status,
                          retry_after=retry_after, request_id=request_id)


def _raise(e: QueuesError) -> Any:
    raise e


def _code_for(status: int) -> str:
    return {400: "invalid_argument", 401: "unauthenticated", 403: "permission_denied", 404: "not_found",
            405: "method_not_allowed", 413: "payload_too_large", 415: "unsupported_media_type",
            429: "rate_limited", 503: "unavailable"}.get(status, "internal")
