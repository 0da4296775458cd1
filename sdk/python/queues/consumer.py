"""A threaded consumer with the Go SDK's semantics: the handler's result settles each
message (docs/clients.md), visibility heartbeats, batched acknowledgements, graceful stop."""

from __future__ import annotations

import http.client
import math
import queue as _queue
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

from .client import MAX_RECEIPT_BATCH, MAX_RECEIVE_BATCH, Client, _q, filter_body
from .errors import QueuesError
from . import tracing
from .models import Message


class Outcome(Exception):
    """A settlement decision: return one from a handler (or raise it).

    ``Ack()`` (the same as returning None) deletes the message; ``Retry()`` makes it visible
    again now; ``RetryAfter(seconds)`` after that delay (it stays in flight until then);
    ``DeadLetter(reason)`` moves it to the dead-letter queue now; ``Defer()`` leaves it in
    flight, unsettled, for the application to settle by its receipt handle. Any other
    exception is a retry (see ``error_retry_after``).
    """

    kind = "ack"

    def __init__(self, delay: float = 0.0, reason: str | None = None) -> None:
        super().__init__(self.kind)
        self.delay = max(float(delay), 0.0)
        self.reason = reason

    def __repr__(self) -> str:
        return f"{type(self).__name__}(delay={self.delay}, reason={self.reason!r})"


class Ack(Outcome):
    kind = "ack"


class Retry(Outcome):
    kind = "retry"


class RetryAfter(Retry):
    def __init__(self, seconds: float) -> None:
        super().__init__(delay=seconds)


class DeadLetter(Outcome):
    kind = "dead-letter"

    def __init__(self, reason: str | None = None) -> None:
        super().__init__(reason=reason)


class Defer(Outcome):
    kind = "defer"


class Cancel(Outcome):
    """Visible again now without counting this delivery (its receiveCount one lower); the
    cancel beyond the queue's maxCancels dead-letters it with reason "max_cancels"."""

    kind = "cancel"


def outcome_of(result: object) -> tuple[Outcome, BaseException | None]:
    """The settlement a handler's result asks for, and the handler's own error when that is
    what caused a retry."""
    if result is None:
        return Ack(), None
    if isinstance(result, Outcome):
        return result, None
    if isinstance(result, BaseException):
        return Retry(), result
    raise TypeError(f"a handler returns None or an Outcome, not {result!r}")


def shutdown_all(conns: Any) -> None:
    """Cuts the sockets of connections blocked in a long poll, so that a stopping consumer's
    threads return now rather than at the end of their wait."""
    for c in conns:
        if c.sock is not None:
            try:
                c.sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def seconds_up(d: float) -> int:
    return 0 if d <= 0 else math.ceil(d)


@dataclass
class ConsumerError:
    """An error the consumer met and carried on after, as ``on_error`` sees it. ``op`` is
    receive, ack, retry, dead-letter, heartbeat, release or handler."""

    op: str
    error: BaseException
    message_id: str = ""


@dataclass(eq=False)
class _Delivery:
    m: Message
    extended: float  # monotonic time its deadline was last set (receive or heartbeat)
    no_beat: bool = False
    abandoned: bool = False


class _Stopped(Exception):
    pass


_FATAL = ("not_found", "unauthenticated", "permission_denied", "invalid_argument")
_NO_EXTEND = ("receipt_handle_stale", "visibility_limit_exceeded", "receipt_handle_invalid")


@dataclass
class Consumer:
    """Receives from ``queue`` and runs ``handler(message)`` for each message on
    ``concurrency`` threads, settling each from the handler's result, until ``stop`` is set.

    Several receives are in flight (``pollers``, default (concurrency+prefetch)/10), each for
    up to 10 messages, and up to ``prefetch`` (default and at most ``concurrency``; 0 for
    none) received messages wait for a free handler. Every held message — waiting or
    running — gets its visibility extended each time half the visibility timeout has passed
    (``visibility_timeout``, default the queue's). Acknowledgements go in batches (up to
    ``ack_batch_size``, at least every ``ack_interval`` seconds).

    When ``stop`` is set, receiving stops (waiting long polls are cut), the messages no
    handler has started are released (visible again at once), running handlers get up to
    ``shutdown_timeout`` seconds, then ``cancelled`` is set and their messages released
    (their results ignored), the acknowledgements held are sent and ``run`` returns. It
    raises early — after the same shutdown — when the service keeps refusing the receives
    (the queue does not exist, the token is not good for it).
    """

    client: Client
    queue: str
    handler: Callable[[Message], Outcome | None]
    concurrency: int = 10
    prefetch: int | None = None
    pollers: int | None = None
    wait_seconds: int = 20
    #: Receive only messages whose attributes match (name to a value or a list of values;
    #: docs/delivery-options.md#consumers-backlogs-and-fairness); the others stay for other consumers.
    filter: Mapping[str, str | Sequence[str]] | None = None  # noqa: A003 (the API's name)
    #: Names this consumer on every receive (docs/delivery-options.md#consumers-backlogs-and-fairness); required on an exclusive fifo queue,
    #: whose groups bind to it (docs/fifo.md "Group policies").
    consumer_id: str | None = None
    visibility_timeout: float | None = None
    shutdown_timeout: float = 30.0
    ack_batch_size: int = MAX_RECEIPT_BATCH
    ack_interval: float = 0.05
    error_retry_after: Callable[[Message, BaseException], float] | None = None
    on_error: Callable[[ConsumerError], None] | None = None
    stop: threading.Event = field(default_factory=threading.Event)
    cancelled: threading.Event = field(default_factory=threading.Event)

    def _report(self, op: str, err: BaseException | None, message_id: str = "") -> None:
        if err is not None and self.on_error is not None:
            self.on_error(ConsumerError(op, err, message_id))

    def _setup(self) -> None:
        self.concurrency = max(1, self.concurrency)
        p = self.concurrency if self.prefetch is None else self.prefetch
        self.prefetch = min(max(p, 0), self.concurrency)
        held = self.concurrency + self.prefetch
        self.pollers = min(max(1, self.pollers or held // MAX_RECEIVE_BATCH), held)
        self.wait_seconds = min(max(self.wait_seconds, 0), 20)
        self.ack_batch_size = min(max(self.ack_batch_size, 1), MAX_RECEIPT_BATCH)
        vt = self.visibility_timeout
        if not vt or vt <= 0:
            try:
                vt = self.client.get_queue(self.queue).visibility_timeout_seconds or 30
            except QueuesError as e:
                if not e.is_auth:
                    raise
                vt = 30
        self._vt = max(seconds_up(vt), 1)
        self._room = threading.Semaphore(held)
        self._gather = threading.Lock()
        self._work: _queue.SimpleQueue[_Delivery | None] = _queue.SimpleQueue()
        # Handles to acknowledge, gathered under a condition the acker waits on with a
        # timeout: a handler's ack wakes no thread unless it fills a batch (a wake-up per
        # message cost more client CPU than the rest of the ack path).
        self._acks: list[str] = []
        self._acks_cv = threading.Condition(threading.Lock())
        self._acks_closed = False
        self._mu = threading.Lock()
        self._held: set[_Delivery] = set()
        self._in_hand = 0
        self._stopping = False
        self._fatal: QueuesError | None = None
        self._settling = 0
        self._settled = threading.Condition(self._mu)
        self._polls: dict[int, http.client.HTTPConnection] = {}

    def __enter__(self) -> "Consumer":
        """Runs the consumer on a thread of its own for the ``with`` block; leaving it stops the
        consumer, waits for its shutdown and raises what ``run`` raised."""
        self._error: BaseException | None = None

        def run() -> None:
            try:
                self.run()
            except BaseException as e:  # noqa: BLE001 - raised again at the block's end
                self._error = e

        self._thread = threading.Thread(target=run, name="queues-consumer", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self._thread.join()
        if self._error is not None:
            raise self._error

    def run(self) -> None:
        """Consumes until ``stop`` is set (see the class)."""
        self._setup()
        acker = threading.Thread(target=self._acker, name="queues-acker", daemon=True)
        beat = threading.Thread(target=self._heartbeats, name="queues-heartbeat", daemon=True)
        acker.start()
        beat.start()
        workers = [threading.Thread(target=self._handle, name=f"queues-handler-{i}", daemon=True)
                   for i in range(self.concurrency)]
        pollers = [threading.Thread(target=self._poll, name=f"queues-poller-{i}", daemon=True)
                   for i in range(self.pollers or 1)]
        for t in workers + pollers:
            t.start()
        self.stop.wait()
        self._cut_polls()
        for t in pollers:
            t.join()
        with self._mu:
            self._stopping = True
        self._release(self._waiting())
        for _ in workers:
            self._work.put(None)
        deadline = time.monotonic() + self.shutdown_timeout
        for t in workers:
            t.join(max(deadline - time.monotonic(), 0))
        with self._mu:  # marked before cancelled is set, so a handler returning at once is not settled
            left = list(self._held)
            for d in left:
                d.abandoned = True
            self._held.clear()
        self.cancelled.set()
        beat.join()
        self._release(left)
        with self._settled:
            self._settled.wait_for(lambda: self._settling == 0)
        with self._acks_cv:
            self._acks_closed = True
            self._acks_cv.notify_all()
        acker.join()
        if self._fatal is not None:
            raise self._fatal

    # Receiving.

    def _cut_polls(self) -> None:
        with self._mu:
            conns = list(self._polls.values())
        shutdown_all(conns)

    def _hook(self, conn: http.client.HTTPConnection) -> None:
        with self._mu:
            self._polls[threading.get_ident()] = conn
        if self.stop.is_set():
            raise _Stopped()

    def _take(self) -> int:
        """Room for up to a batch (see the Go SDK's take): the first message's room waiting,
        then up to 5 ms more for a full batch while received messages are in hand."""
        with self._gather:
            while not self._room.acquire(timeout=0.25):
                if self.stop.is_set():
                    return 0
            n = 1
            deadline = time.monotonic() + 0.005
            while n < MAX_RECEIVE_BATCH:
                if self._room.acquire(blocking=False):
                    n += 1
                    continue
                wait = deadline - time.monotonic()
                with self._mu:
                    in_hand = self._in_hand
                if wait <= 0 or in_hand == 0 or not self._room.acquire(timeout=wait):
                    break
                n += 1
            return n

    def _poll(self) -> None:
        failures = 0
        while not self.stop.is_set():
            n = self._take()
            if n == 0:
                return
            leased = time.monotonic()
            msgs: list[Message] = []
            try:
                body: dict[str, Any] = {"maxMessages": n, "visibilityTimeoutSeconds": self._vt, "waitSeconds": self.wait_seconds}
                if self.filter:
                    body["filter"] = filter_body(self.filter)
                if self.consumer_id is not None:
                    body["consumerId"] = self.consumer_id
                a = self.client._t.request("POST", _q(self.queue) + "/receive", body=body,
                                           timeout=self.client._t.timeout + self.wait_seconds, hook=self._hook)[1]
                msgs = [Message.from_dict(m) for m in a.get("messages", [])]
                failures = 0
            except (_Stopped, QueuesError) as e:
                self._room.release(n)
                if self.stop.is_set():
                    return
                if isinstance(e, QueuesError) and e.code in _FATAL:
                    self._fatal = self._fatal or e
                    self.stop.set()
                    return
                self._report("receive", e)
                failures += 1
                self.stop.wait(min(0.1 * 2 ** min(failures, 6), 5.0))
                continue
            if n > len(msgs):
                self._room.release(n - len(msgs))
            self._hold(msgs, leased)

    def _hold(self, msgs: list[Message], leased: float) -> None:
        ds = [_Delivery(m, leased) for m in msgs]
        with self._mu:
            self._held.update(ds)
            self._in_hand += len(ds)
        for d in ds:
            self._work.put(d)

    # Handling and settling.

    def _handle(self) -> None:
        while True:
            d = self._work.get()
            if d is None:
                return
            with self._mu:
                if self._stopping or d.abandoned:
                    continue  # left held: released at shutdown
            result, _ = tracing.run_handler(self.queue, d.m, self.handler, outcome_of)
            with self._mu:
                if d.abandoned:
                    return  # released at the deadline; the consumer is gone
                self._held.discard(d)
                self._settling += 1
            try:
                self._settle(d.m, result)
            finally:
                with self._mu:
                    self._settling -= 1
                    self._in_hand -= 1
                    self._settled.notify_all()
                self._room.release()

    def _settle(self, m: Message, result: object) -> None:
        try:
            o, err = outcome_of(result)
        except TypeError as e:
            o, err = Retry(), e
        if err is not None:
            self._report("handler", err, m.message_id)
            if self.error_retry_after is not None:
                o = RetryAfter(self.error_retry_after(m, err))
        if not m.receipt_handle:
            return  # an at-most-once queue's message left the queue when received: nothing to settle
        try:
            if o.kind == "ack":
                self._ack(m.receipt_handle)
            elif o.kind == "retry":
                self.client.change_visibility(m.receipt_handle, seconds_up(o.delay))
            elif o.kind == "dead-letter":
                self.client.dead_letter(m.receipt_handle, o.reason)
            elif o.kind == "cancel":
                self.client.cancel(m.receipt_handle)
        except QueuesError as e:
            self._report(o.kind, e, m.message_id)

    def _ack(self, handle: str) -> None:
        with self._acks_cv:
            # Back-pressure: at most 4 batches wait while the acknowledgements in flight end.
            while len(self._acks) >= 4 * self.ack_batch_size and not self._acks_closed:
                self._acks_cv.wait()
            self._acks.append(handle)
            if len(self._acks) == self.ack_batch_size:
                self._acks_cv.notify_all()

    def _acker(self) -> None:
        """Sends the gathered acknowledgements: a full batch at once, the rest at least every
        ``ack_interval`` seconds, 4 requests at a time; at close, all that is left."""
        pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="queues-ack")
        while True:
            with self._acks_cv:
                if len(self._acks) < self.ack_batch_size and not self._acks_closed:
                    self._acks_cv.wait(self.ack_interval)
                closed = self._acks_closed
                batches = [self._acks[i:i + self.ack_batch_size] for i in range(0, len(self._acks), self.ack_batch_size)]
                self._acks = []
                self._acks_cv.notify_all()  # room again for handlers held back
            for b in batches:
                pool.submit(self._send_acks, b)
            if closed:
                pool.shutdown(wait=True)
                return

    def _send_acks(self, handles: list[str]) -> None:
        try:
            for e in self.client.ack_batch(handles):
                self._report("ack", e)
        except QueuesError as e:
            self._report("ack", e)

    # Heartbeat and release.

    def _heartbeats(self) -> None:
        half = self._vt / 2
        while not self.cancelled.wait(max(self._vt / 8, 0.1)):
            cutoff = time.monotonic() - half
            with self._mu:
                due = [d for d in self._held
                       if d.m.receipt_handle and not d.no_beat and not d.abandoned and d.extended < cutoff]
            for i in range(0, len(due), MAX_RECEIPT_BATCH):
                chunk = due[i:i + MAX_RECEIPT_BATCH]
                sent = time.monotonic()
                try:
                    errs = self.client.change_visibility_batch([(d.m.receipt_handle, self._vt) for d in chunk])
                except QueuesError as e:
                    self._report("heartbeat", e)
                    break
                with self._mu:
                    for d, err in zip(chunk, errs):
                        if err is None:
                            d.extended = sent
                        elif err.code in _NO_EXTEND:
                            d.no_beat = True
                for d, err in zip(chunk, errs):
                    self._report("heartbeat", err, d.m.message_id)

    def _waiting(self) -> list[_Delivery]:
        """The messages no handler has started, taken out of the work queue and abandoned."""
        ds: list[_Delivery] = []
        while True:
            try:
                d = self._work.get_nowait()
            except _queue.Empty:
                break
            if d is not None:
                ds.append(d)
        with self._mu:
            for d in ds:
                d.abandoned = True
                self._held.discard(d)
        return ds

    def _release(self, ds: list[_Delivery]) -> None:
        ds = [d for d in ds if d.m.receipt_handle]  # at-most-once messages are gone already
        for i in range(0, len(ds), MAX_RECEIPT_BATCH):
            chunk = ds[i:i + MAX_RECEIPT_BATCH]
            try:
                errs = self.client.change_visibility_batch([(d.m.receipt_handle, 0) for d in chunk])
            except QueuesError as e:
                self._report("release", e)
                continue
            for d, err in zip(chunk, errs):
                self._report("release", err, d.m.message_id)
