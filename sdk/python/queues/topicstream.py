"""The topic stream (``GET /v1/topics/{topic}/stream``, docs/streaming.md "The topic
stream"): a topic's log from a bookmark on, over a WebSocket (queues/_ws.py), under credit.
``TopicStreamConnection`` is one connection; ``TopicStream`` iterates across reconnects,
keeping the bookmark, as the Go SDK's ``Client.TopicStream`` does."""

from __future__ import annotations

import json
import random
import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

from . import _ws
from .errors import QueuesError
from .models import Model
from .topics import LogEntry

# The codes that end a TopicStream: the stream would fail the same way again.
FINAL_CODES = frozenset({"not_found", "unauthenticated", "permission_denied", "invalid_argument"})

DEFAULT_WINDOW = 256


@dataclass
class StreamEntry(LogEntry):
    """One entry a topic stream delivered; ``delta`` True: ``body`` is an RFC 7396 merge
    patch to apply to the body last delivered for ``key``."""

    delta: bool = False


@dataclass
class TopicGap(Model):
    """Entries ``from_``…``first_sequence − 1`` were trimmed from the log (its retention)
    before the stream could deliver them; ``from_`` is None when a time older than the log
    holds was asked."""

    from_: int | None = None
    first_sequence: int = 0
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, d: dict[str, Any] | None) -> "TopicGap":
        if d is not None and "from" in d:  # a Python keyword: the field is from_
            d = {("from_" if k == "from" else k): v for k, v in d.items()}
        return super().from_dict(d)


@dataclass(frozen=True)
class TopicEvent:
    """What a topic stream yields: ``kind`` "entry" (``entry`` set) or "gap" (``gap`` set,
    before the entries that follow it)."""

    kind: str
    entry: StreamEntry | None = None
    gap: TopicGap | None = None


def decode_frame(text: str) -> list[TopicEvent]:
    """A service frame's events; an error frame raises its QueuesError."""
    try:
        f = json.loads(text)
    except ValueError as e:
        raise QueuesError("internal", f"queues: a topic stream frame that is not JSON: {text[:60]!r}") from e
    if not isinstance(f, dict):
        raise QueuesError("internal", f"queues: an unexpected topic stream frame: {text[:60]!r}")
    if isinstance(f.get("error"), dict):
        raise QueuesError.from_body(f["error"])
    if isinstance(f.get("gap"), dict):
        return [TopicEvent("gap", gap=TopicGap.from_dict(f["gap"]))]
    if isinstance(f.get("messages"), list):
        return [TopicEvent("entry", entry=StreamEntry.from_dict(m)) for m in f["messages"]]
    raise QueuesError("internal", f"queues: an unexpected topic stream frame: {text[:60]!r}")


class TopicStreamConnection:
    """One open topic stream: grant ``credit``, read frames with ``next`` (blocking), and
    ``close``. ``next`` raises the error that ended the stream: the service's error frame as
    its QueuesError, a drop or a close as a ``_ws.WebSocketError`` (code ``transport``)."""

    def __init__(self, ws: _ws.WebSocket) -> None:
        self._ws = ws

    def credit(self, n: int) -> None:
        """Lets the service deliver n more entries (1–1,000; at most 1,000 held)."""
        self._ws.send_text(json.dumps({"credit": n}))

    def next(self) -> list[TopicEvent]:
        """The next frame's events, waiting for it."""
        text = self._ws.recv()
        try:
            return decode_frame(text)
        except QueuesError:
            self._ws.close(1000)
            raise

    def close(self) -> None:
        self._ws.close(1000)

    def abort(self) -> None:
        """Shuts the connection at once (from any thread: a blocked ``next`` raises)."""
        self._ws.abort()


def _position(v: Any) -> str | None:
    if v is None or isinstance(v, str):
        return v
    if isinstance(v, int):
        return str(v)
    return v.isoformat()


def stream_query(from_: Any, filter: Any, delta: bool, max_messages: int | None) -> dict[str, Any]:  # noqa: A002
    """The stream's query parameters."""
    q: dict[str, Any] = {}
    p = _position(from_)
    if p is not None and p != "now":
        q["from"] = p
    if delta:
        q["delta"] = "true"
    if max_messages:
        q["maxMessages"] = max_messages
    for name, values in (filter or {}).items():
        q["attribute." + name] = [values] if isinstance(values, str) else list(values)
    return q


class TopicStream:
    """An iterator over a topic's entries and gaps (``TopicEvent``) across reconnects: see
    ``Client.topic_stream``. ``bookmark`` is where a reconnect starts (the sequence after the
    last entry yielded). ``close()`` (from any thread) ends the iteration."""

    def __init__(self, opener: Callable[[dict[str, Any]], TopicStreamConnection],
                 last_sequence: Callable[[], int | None], *, from_: Any, filter: Any,  # noqa: A002
                 delta: bool, max_messages: int | None, window: int) -> None:
        self._open = opener
        self._last_sequence = last_sequence
        self.bookmark: Any = from_
        self._filter, self._delta, self._max = filter, delta, max_messages
        self.window = window if 0 < window <= 1000 else DEFAULT_WINDOW
        self._conn: TopicStreamConnection | None = None
        self._closed = threading.Event()
        self._delivered = False
        self._gen = self._run()

    def __iter__(self) -> "TopicStream":
        return self

    def __next__(self) -> TopicEvent:
        return next(self._gen)

    def __enter__(self) -> "TopicStream":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Ends the stream; a ``next`` blocked in another thread stops the iteration."""
        self._closed.set()
        conn = self._conn
        if conn is not None:
            conn.abort()

    def _run(self) -> Iterator[TopicEvent]:
        if self.bookmark is None or self.bookmark == "now":
            # A bookmark from the start, so a reconnect before the first entry misses nothing.
            last = self._last_sequence()
            if last is not None:
                self.bookmark = last + 1
        failures = 0
        while not self._closed.is_set():
            err: QueuesError | None = None
            self._delivered = False
            try:
                self._conn = self._open(stream_query(self.bookmark, self._filter, self._delta, self._max))
                if self._closed.is_set():
                    self._conn.abort()
                yield from self._session(self._conn)
            except QueuesError as e:
                err = e
            finally:
                if self._conn is not None:
                    self._conn.close()
                    self._conn = None
            if self._delivered:
                failures = 0  # the last connection worked: reconnect soon
            if self._closed.is_set():
                return
            if err is not None and err.code in FINAL_CODES:
                raise err
            failures += 1
            backoff = min(0.1 * 2 ** min(failures, 6), 5.0)
            wait = max(backoff / 2 + random.uniform(0, backoff / 2), (err.retry_after or 0.0) if err else 0.0)
            if self._closed.wait(wait):
                return

    def _session(self, conn: TopicStreamConnection) -> Iterator[TopicEvent]:
        """Yields one connection's events, moving the bookmark on and granting credit as
        entries are taken, until it ends (raising why)."""
        conn.credit(self.window)
        used = 0
        while True:
            events = conn.next()
            for ev in events:
                if ev.entry is not None:
                    self.bookmark = ev.entry.sequence + 1
                    used += 1
                    self._delivered = True
                elif ev.gap is not None:
                    self.bookmark = ev.gap.first_sequence
                yield ev
            if used >= max(self.window // 2, 1):
                conn.credit(used)
                used = 0
