"""asyncio: ``AsyncClient`` (every call of ``Client`` as a coroutine, every list as an async
iterator), ``AsyncConsumer`` (async handlers, the Consumer's settlement semantics) and
``handle_push_async`` (a push receiver for ASGI apps: FastAPI, Starlette, aiohttp).

Why a thread pool around the sync client rather than HTTP on asyncio streams: each pool
thread keeps its own kept-alive connection and ``http.client`` releases the GIL while it
waits on the socket, so N calls awaited at once are N requests on the wire at once — real
concurrency, bounded by ``max_workers``. And every call goes through the one transport the
sync client uses (retries with Retry-After, typed errors, proxies from the environment,
trace context), so the two clients cannot drift apart. The cost is a thread per call in
flight, which a client of a queue service (tens of calls at once, not tens of thousands)
affords. The loop itself never blocks: it only awaits futures."""

from __future__ import annotations

import asyncio
import contextvars
import functools
import inspect
import ssl
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, AsyncIterator, Awaitable, Callable, Iterator, Mapping, Sequence

from . import tracing
from ._aio_calls import AsyncCalls
from ._http import RetryPolicy
from .client import DEFAULT_URL, ENV_TOKEN, ENV_URL, MAX_RECEIPT_BATCH, MAX_RECEIVE_BATCH, USER_AGENT, Client, _q, filter_body
from .consumer import ConsumerError, Retry, RetryAfter, outcome_of, seconds_up, shutdown_all
from .errors import QueuesError
from .models import Message
from .webhooks import DEFAULT_TOLERANCE_SECONDS, Answer, HeadersLike, PushBatch, group_lanes, json_answer, push_result, verified_batch

class AsyncClient(AsyncCalls):
    """Every call of :class:`Client` as a coroutine (``await c.send("orders", "hi")``), every
    paginated list as an async iterator (``async for q in c.all_queues()``); the same
    arguments, answers and errors. ``async with AsyncClient(...) as c:`` closes it.
    ``max_workers`` bounds the calls in flight at once (module docstring: why threads)."""

    def __init__(self, base_url: str = DEFAULT_URL, token: str | None = None, *, timeout: float = 30.0,
                 retry: RetryPolicy | None = None, user_agent: str = USER_AGENT, max_workers: int = 32,
                 ssl_context: ssl.SSLContext | None = None) -> None:
        self.sync = Client(base_url, token, timeout=timeout, retry=retry, user_agent=user_agent, ssl_context=ssl_context)
        self._pool = ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="queues-aio")
        self._max_workers = max_workers

    @classmethod
    def from_env(cls, **kw: Any) -> "AsyncClient":
        """A client for ``$QUEUES_URL`` (default http://127.0.0.1:8080) with ``$QUEUES_TOKEN``."""
        import os
        return cls(os.environ.get(ENV_URL) or DEFAULT_URL, os.environ.get(ENV_TOKEN), **kw)

    @property
    def base_url(self) -> str:
        return self.sync.base_url

    def with_token(self, token: str | None) -> "AsyncClient":
        """A client for the same service presenting another token (its own pool)."""
        t = self.sync._t
        return AsyncClient(t.base_url, token, timeout=t.timeout, retry=t.retry, user_agent=t.user_agent,
                           max_workers=self._max_workers, ssl_context=t.ssl_context)

    async def run(self, fn: Callable[..., Any], *args: Any, **kw: Any) -> Any:
        """Runs ``fn`` on the client's pool and awaits it, in a copy of the caller's context
        (so the current span reaches the request's traceparent)."""
        ctx = contextvars.copy_context()
        return await asyncio.get_running_loop().run_in_executor(self._pool, functools.partial(ctx.run, fn, *args, **kw))

    async def call(self, method: str, path: str, query: dict[str, Any] | None = None, body: Any = None,
                   *, timeout: float | None = None) -> Any:
        """Calls any route and returns its decoded JSON answer (Client.call)."""
        return await self.run(self.sync.call, method, path, query, body, timeout=timeout)

    async def aclose(self) -> None:
        """Lets the calls in flight finish and ends the pool (its threads' connections close)."""
        await asyncio.get_running_loop().run_in_executor(None, functools.partial(self._pool.shutdown, wait=True))

    def close(self) -> None:
        self._pool.shutdown(wait=False)

    async def __aenter__(self) -> "AsyncClient":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def iterate(self, it: Iterator[Any]) -> AsyncIterator[Any]:
        """A sync iterator's items, each ``next`` on the pool: a page is read there when the
        previous one is used up."""
        done = object()
        while True:
            item = await self.run(next, it, done)
            if item is done:
                return
            yield item

    async def topic_stream(self, topic: str, **kw: Any) -> AsyncIterator[Any]:
        """Client.topic_stream as an async iterator (each wait for an entry on the pool);
        leaving the ``async for`` closes the stream."""
        stream = await self.run(self.sync.topic_stream, topic, **kw)
        try:
            async for ev in self.iterate(iter(stream)):
                yield ev
        finally:
            stream.close()

    def consumer(self, queue: str, handler: Callable[[Message], Any], **options: Any) -> "AsyncConsumer":
        """An AsyncConsumer of queue (see it for the options)."""
        return AsyncConsumer(self, queue, handler, **options)

    async def consume(self, queue: str, handler: Callable[[Message], Any], **options: Any) -> None:
        """Runs an AsyncConsumer until it is stopped (or its task cancelled)."""
        await AsyncConsumer(self, queue, handler, **options).run()


def is_async(handler: Callable[..., Any]) -> bool:
    """Whether the handler is to be awaited: an ``async def`` function, a partial of one, or
    an object whose ``__call__`` is one; anything else runs on a worker thread."""
    return inspect.iscoroutinefunction(handler) or inspect.iscoroutinefunction(getattr(handler, "__call__", None))


# The async consumer.


@dataclass(eq=False)
class _Held:
    m: Message
    extended: float
    no_beat: bool = False


_FATAL = ("not_found", "unauthenticated", "permission_denied", "invalid_argument")
_NO_EXTEND = ("receipt_handle_stale", "visibility_limit_exceeded", "receipt_handle_invalid")


class AsyncConsumer:
    """Receives from ``queue`` and awaits ``handler(message)`` (a coroutine function; a plain
    function runs on the client's pool) for up to ``concurrency`` messages at once, settling
    each from its result as :class:`queues.Consumer` does: None or ``Ack()`` acknowledges (in
    batches), ``Retry()``/``RetryAfter(s)``/``DeadLetter(r)``/``Cancel()``/``Defer()``, an
    exception retries. Long polls run on threads of the consumer's own (``pollers`` of them,
    default 2 x concurrency/5), so they never take the client's pool from the settlements. Held
    messages get their visibility extended each time half the visibility timeout passes.

    ``await consumer.run()`` until ``stop()``; or ``async with client.consumer(...)``, which
    runs it as a task and stops it on exit. Stopping cuts the long polls, releases the
    messages no handler has started, gives running handlers ``shutdown_timeout`` seconds,
    then cancels them and releases their messages, sends the acknowledgements held and
    returns. ``run`` raises early (after the same shutdown) when the service refuses the
    receives for good (queue missing, token not good for it)."""

    def __init__(self, client: AsyncClient, queue: str, handler: Callable[[Message], Any], *, concurrency: int = 10,
                 pollers: int | None = None, wait_seconds: int = 20, visibility_timeout: float | None = None,
                 filter: Mapping[str, str | Sequence[str]] | None = None,  # noqa: A002 (the API's name)
                 shutdown_timeout: float = 30.0, ack_interval: float = 0.05,
                 error_retry_after: Callable[[Message, BaseException], float] | None = None,
                 on_error: Callable[[ConsumerError], None] | None = None) -> None:
        self.client, self.queue, self.handler = client, queue, handler
        self.concurrency = max(1, concurrency)
        # Twice Consumer's default: each batch here also hops from its thread to the loop,
        # and with (2 x concurrency)/10 pollers the hops, not the handlers, set the pace
        # (32 coroutines: 4,243 and 5,556 msg/s with 6 pollers, 6,177 and 7,506 with 12).
        self.pollers = max(1, pollers or (4 * self.concurrency) // MAX_RECEIVE_BATCH)
        self.wait_seconds = min(max(wait_seconds, 0), 20)
        self.visibility_timeout, self.filter = visibility_timeout, filter
        self.shutdown_timeout, self.ack_interval = shutdown_timeout, ack_interval
        self.error_retry_after, self.on_error = error_retry_after, on_error
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def stop(self) -> None:
        """Asks ``run`` to stop (from the loop's thread)."""
        self._stop.set()

    async def __aenter__(self) -> "AsyncConsumer":
        self._task = asyncio.create_task(self.run())
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.stop()
        if self._task is not None:
            await self._task

    def _report(self, op: str, err: BaseException | None, message_id: str = "") -> None:
        if err is not None and self.on_error is not None:
            self.on_error(ConsumerError(op, err, message_id))

    async def _setup(self) -> None:
        vt = self.visibility_timeout
        if not vt or vt <= 0:
            try:
                vt = (await self.client.get_queue(self.queue)).visibility_timeout_seconds or 30
            except QueuesError as e:
                if not e.is_auth:
                    raise
                vt = 30
        self._vt = max(seconds_up(vt), 1)
        self._room = self.concurrency * 2  # running plus as many waiting for a handler
        self._room_changed = asyncio.Condition()
        self._work: asyncio.Queue[_Held] = asyncio.Queue()
        self._held: set[_Held] = set()
        self._acks: list[str] = []
        self._fatal: QueuesError | None = None
        self._polls: dict[int, Any] = {}
        self._polls_mu = threading.Lock()
        self._poll_pool = ThreadPoolExecutor(max_workers=self.pollers, thread_name_prefix="queues-aio-poll")
        self._background: set[asyncio.Future[Any]] = set()
        self._busy: dict[asyncio.Task[Any], bool] = {}

    async def run(self) -> None:
        """Consumes until ``stop()`` (see the class)."""
        await self._setup()
        pollers = [asyncio.create_task(self._poll()) for _ in range(self.pollers)]
        workers = [asyncio.create_task(self._work_loop()) for _ in range(self.concurrency)]
        beat = asyncio.create_task(self._heartbeats())
        acker = asyncio.create_task(self._acker())
        try:
            await self._stop.wait()
        finally:
            await self._shutdown(pollers, workers, beat, acker)
        if self._fatal is not None:
            raise self._fatal

    async def _shutdown(self, pollers: list[asyncio.Task[None]], workers: list[asyncio.Task[None]],
                        beat: asyncio.Task[None], acker: asyncio.Task[None]) -> None:
        self._stop.set()
        self._cut_polls()
        async with self._room_changed:
            self._room_changed.notify_all()
        await asyncio.gather(*pollers, return_exceptions=True)
        waiting = []
        while not self._work.empty():
            waiting.append(self._work.get_nowait())
        self._held.difference_update(waiting)
        for w in workers:  # idle workers wait on the queue: end them; busy ones finish first
            if not self._busy.get(w, False):
                w.cancel()
        await self._release(waiting)
        _, late = await asyncio.wait(workers, timeout=self.shutdown_timeout) if workers else (set(), set())
        for w in late:
            w.cancel()
        await asyncio.gather(*workers, return_exceptions=True)
        left, self._held = list(self._held), set()
        beat.cancel()
        await asyncio.gather(beat, return_exceptions=True)
        await self._release(left)
        acker.cancel()
        await asyncio.gather(acker, return_exceptions=True)
        await self._flush_acks()
        await asyncio.gather(*self._background, return_exceptions=True)
        self._poll_pool.shutdown(wait=False)

    # Receiving, on the consumer's own threads.

    def _hook(self, conn: Any) -> None:
        with self._polls_mu:
            self._polls[threading.get_ident()] = conn
        if self._stop.is_set():
            raise QueuesError("internal", "stopping")

    def _cut_polls(self) -> None:
        with self._polls_mu:
            conns = list(self._polls.values())
        shutdown_all(conns)

    async def _take(self) -> int:
        """Room for up to a batch: waits for the first message's room, then, while received
        messages are in hand, up to 5 ms more for a full batch (as Consumer._take: a receive
        per freed slot costs a request per message)."""
        while True:
            async with self._room_changed:
                await self._room_changed.wait_for(lambda: self._room > 0 or self._stop.is_set())
            if self._room < MAX_RECEIVE_BATCH and self._held and not self._stop.is_set():
                await asyncio.sleep(0.005)
            if self._stop.is_set():
                return 0
            if self._room > 0:  # another poller may have taken it meanwhile
                n = min(self._room, MAX_RECEIVE_BATCH)
                self._room -= n
                return n

    async def _give(self, n: int) -> None:
        async with self._room_changed:
            self._room += n
            self._room_changed.notify_all()

    async def _poll(self) -> None:
        failures = 0
        t = self.client.sync._t
        loop = asyncio.get_running_loop()
        while not self._stop.is_set():
            n = await self._take()
            if n == 0:
                return
            body: dict[str, Any] = {"maxMessages": n, "visibilityTimeoutSeconds": self._vt, "waitSeconds": self.wait_seconds}
            if self.filter:
                body["filter"] = filter_body(self.filter)
            leased = time.monotonic()
            call = functools.partial(t.request, "POST", _q(self.queue) + "/receive", body=body,
                                     timeout=t.timeout + self.wait_seconds, hook=self._hook)
            try:
                a = (await loop.run_in_executor(self._poll_pool, call))[1]
                msgs = [Message.from_dict(m) for m in a.get("messages", [])]
                failures = 0
            except QueuesError as e:
                await self._give(n)
                if self._stop.is_set():
                    return
                if e.code in _FATAL:
                    self._fatal = self._fatal or e
                    self._stop.set()
                    return
                self._report("receive", e)
                failures += 1
                try:
                    await asyncio.wait_for(self._stop.wait(), min(0.1 * 2 ** min(failures, 6), 5.0))
                except asyncio.TimeoutError:
                    pass
                continue
            if n > len(msgs):
                await self._give(n - len(msgs))
            for m in msgs:
                h = _Held(m, leased)
                self._held.add(h)
                self._work.put_nowait(h)

    # Handling and settling.

    async def _work_loop(self) -> None:
        me = asyncio.current_task()
        assert me is not None
        while True:
            self._busy[me] = False
            if self._stop.is_set():
                return  # stopping: the waiting messages are released, not handled
            h = await self._work.get()
            if self._stop.is_set():
                return  # still in _held: released at shutdown
            self._busy[me] = True
            result = await self._run_handler(h.m)
            self._held.discard(h)
            try:
                await self._settle(h.m, result)
            finally:
                await self._give(1)

    async def _run_handler(self, m: Message) -> object:
        if is_async(self.handler):
            result, _ = await tracing.run_handler_async(self.queue, m, self.handler, outcome_of)
        else:
            result, _ = await self.client.run(tracing.run_handler, self.queue, m, self.handler, outcome_of)
        return result

    async def _settle(self, m: Message, result: object) -> None:
        try:
            o, err = outcome_of(result)
        except TypeError as e:
            o, err = Retry(), e
        if err is not None:
            self._report("handler", err, m.message_id)
            if self.error_retry_after is not None:
                o = RetryAfter(self.error_retry_after(m, err))
        if not m.receipt_handle:
            return  # an at-most-once queue's message left the queue when received
        c = self.client
        try:
            if o.kind == "ack":
                self._acks.append(m.receipt_handle)
                if len(self._acks) >= MAX_RECEIPT_BATCH:
                    self._spawn(self._send_acks(self._take_acks()))
            elif o.kind == "retry":
                await c.change_visibility(m.receipt_handle, seconds_up(o.delay))
            elif o.kind == "dead-letter":
                await c.dead_letter(m.receipt_handle, o.reason)
            elif o.kind == "cancel":
                await c.cancel(m.receipt_handle)
        except QueuesError as e:
            self._report(o.kind, e, m.message_id)

    def _spawn(self, coro: Awaitable[Any]) -> None:
        task = asyncio.ensure_future(coro)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    def _take_acks(self) -> list[str]:
        handles, self._acks = self._acks[:MAX_RECEIPT_BATCH], self._acks[MAX_RECEIPT_BATCH:]
        return handles

    async def _flush_acks(self) -> None:
        while self._acks:
            await self._send_acks(self._take_acks())

    async def _send_acks(self, handles: list[str]) -> None:
        try:
            for e in await self.client.ack_batch(handles):
                self._report("ack", e)
        except QueuesError as e:
            self._report("ack", e)

    async def _acker(self) -> None:
        while True:
            await asyncio.sleep(self.ack_interval)  # the batching interval, not a wait for an event
            while self._acks:
                self._spawn(self._send_acks(self._take_acks()))

    # Heartbeat and release.

    async def _heartbeats(self) -> None:
        while True:
            await asyncio.sleep(max(self._vt / 8, 0.1))  # a period, not a wait for an event
            cutoff = time.monotonic() - self._vt / 2
            due = [h for h in self._held if h.m.receipt_handle and not h.no_beat and h.extended < cutoff]
            for i in range(0, len(due), MAX_RECEIPT_BATCH):
                chunk = due[i:i + MAX_RECEIPT_BATCH]
                sent = time.monotonic()
                try:
                    errs = await self.client.change_visibility_batch([(h.m.receipt_handle, self._vt) for h in chunk])
                except QueuesError as e:
                    self._report("heartbeat", e)
                    break
                for h, err in zip(chunk, errs):
                    if err is None:
                        h.extended = sent
                    elif err.code in _NO_EXTEND:
                        h.no_beat = True
                    self._report("heartbeat", err, h.m.message_id)

    async def _release(self, held: list[_Held]) -> None:
        hs = [h for h in held if h.m.receipt_handle]
        for i in range(0, len(hs), MAX_RECEIPT_BATCH):
            chunk = hs[i:i + MAX_RECEIPT_BATCH]
            try:
                errs = await self.client.change_visibility_batch([(h.m.receipt_handle, 0) for h in chunk])
            except QueuesError as e:
                self._report("release", e)
                continue
            for h, err in zip(chunk, errs):
                self._report("release", err, h.m.message_id)


# The async push receiver.


async def handle_push_async(secrets: str | Sequence[str | None], headers: HeadersLike, raw_body: bytes,
                            handler: Callable[[Message], Any], *,
                            tolerance_seconds: float = DEFAULT_TOLERANCE_SECONDS, concurrency: int = 10,
                            error_retry_after: Callable[[Message, BaseException], float] | None = None,
                            on_error: Callable[[BaseException], None] | None = None) -> Answer:
    """``handle_push`` for asyncio apps: verifies the signature and parses the batch on a
    worker thread (an HMAC and a JSON parse of up to a megabyte or so would stall every other
    request of the loop), then awaits ``handler`` (a coroutine function; a plain function
    runs on a worker thread) for each message — in order within a message group, up to
    ``concurrency`` lanes at once — and returns (status, headers, body) as handle_push does.

    FastAPI::

        @app.post("/push")
        async def push(request: Request):
            status, headers, body = await handle_push_async(SECRETS, request.headers.items(),
                                                            await request.body(), handle)
            return Response(body, status, dict(headers))
    """
    checked = await asyncio.to_thread(verified_batch, secrets, headers, raw_body,
                                      tolerance_seconds=tolerance_seconds, on_error=on_error)
    if not isinstance(checked, PushBatch):
        return checked
    batch = checked
    queue = str(batch.queue.get("name", "")) if isinstance(batch.queue, dict) else ""
    results: list[dict[str, Any]] = [{} for _ in batch.messages]
    gate = asyncio.Semaphore(max(1, concurrency))
    handler_is_async = is_async(handler)

    async def run_lane(lane: list[int]) -> None:
        async with gate:
            for i in lane:
                m = batch.messages[i]
                if handler_is_async:
                    result, raised = await tracing.run_handler_async(queue, m, handler, outcome_of)
                else:
                    result, raised = await asyncio.to_thread(tracing.run_handler, queue, m, handler, outcome_of)
                if raised and on_error:
                    on_error(result)  # type: ignore[arg-type]
                results[i] = push_result(m, result, error_retry_after)

    await asyncio.gather(*(run_lane(lane) for lane in group_lanes(batch.messages)))
    return json_answer({"results": results})
