"""Trace propagation (docs/tracing.md), when the program has OpenTelemetry.

The SDK stays standard-library only: it imports ``opentelemetry.trace`` (the API package) if
the program can, once, and otherwise does nothing. With it:

- every request carries the ``traceparent`` (and ``tracestate``) of the current span, when
  that span is valid, so a send stores the producer's context with each message that has no
  ``traceparent`` of its own — as the Go and TypeScript SDKs do;
- the consumer and the push receivers run each handler under a ``process <queue>`` consumer
  span, the child of the message's ``traceparent`` and current while the handler runs.

Without OpenTelemetry, a program can still carry the context by hand: ``Client.send(...,
traceparent=...)`` / ``SendMessage.traceparent`` set a message's, and ``Message.traceparent``
reads it back.
"""

from __future__ import annotations

import asyncio
import re
import threading
from typing import Any, Awaitable, Callable

#: The instrumentation scope of the SDK's spans.
TRACER_NAME = "queues"

_TRACEPARENT = re.compile(r"^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$")

_lock = threading.Lock()
_loaded = False
_trace: Any = None


def _otel() -> Any:
    """The ``opentelemetry.trace`` module, or None when the program does not have it."""
    global _loaded, _trace
    if not _loaded:
        with _lock:
            if not _loaded:
                try:
                    from opentelemetry import trace  # type: ignore[import-not-found,import,unused-ignore]
                except ImportError:
                    trace = None
                _trace, _loaded = trace, True
    return _trace


def _reset() -> None:
    """Forgets what _otel found (tests install and remove a module)."""
    global _loaded, _trace
    with _lock:
        _loaded, _trace = False, None


def valid_traceparent(tp: str | None) -> bool:
    """True for a W3C traceparent as the service accepts it (version 00, lowercase hex, ids
    not all zeros)."""
    m = _TRACEPARENT.match(tp or "")
    return m is not None and m.group(1) != "0" * 32 and m.group(2) != "0" * 16


def inject(headers: dict[str, str]) -> None:
    """Sets ``traceparent`` (and ``tracestate``) from the current span, when it is valid.
    Written directly rather than through the global propagator, which a program need not
    have set."""
    trace = _otel()
    if trace is None:
        return
    sc = trace.get_current_span().get_span_context()
    if not sc.is_valid:
        return
    headers["traceparent"] = f"00-{sc.trace_id:032x}-{sc.span_id:016x}-{int(sc.trace_flags) & 0xff:02x}"
    state = sc.trace_state.to_header() if sc.trace_state else ""
    if state:
        headers["tracestate"] = state


def _process_span(queue: str, m: Any) -> tuple[Any, Any]:
    """The OpenTelemetry module and a ``process <queue>`` span (a context manager making it
    current) for a message with a valid traceparent; (None, None) otherwise."""
    trace = _otel()
    match = _TRACEPARENT.match(getattr(m, "traceparent", None) or "") if trace is not None else None
    if match is None:
        return None, None
    parent = trace.SpanContext(trace_id=int(match.group(1), 16), span_id=int(match.group(2), 16),
                               is_remote=True, trace_flags=trace.TraceFlags(int(match.group(3), 16)))
    ctx = trace.set_span_in_context(trace.NonRecordingSpan(parent))
    attrs = {
        "messaging.system": "queues",
        "messaging.operation.type": "process",
        "messaging.destination.name": queue,
        "messaging.message.id": m.message_id,
        "queues.receive_count": m.receive_count,
    }
    return trace, trace.get_tracer(TRACER_NAME).start_as_current_span(
        f"process {queue}", context=ctx, kind=trace.SpanKind.CONSUMER, attributes=attrs,
        record_exception=False, set_status_on_exception=False)


def _end_span(trace: Any, span: Any, result: object, raised: bool,
              outcome_of: Callable[[object], tuple[Any, BaseException | None]]) -> None:
    if raised:
        span.record_exception(result)
    try:
        kind = outcome_of(result)[0].kind
    except TypeError:
        kind = "retry"  # not an outcome: the consumer retries it
    if kind in ("retry", "dead-letter"):
        span.set_status(trace.Status(trace.StatusCode.ERROR, kind))


def run_handler(queue: str, m: Any, handler: Callable[[Any], object],
                outcome_of: Callable[[object], tuple[Any, BaseException | None]]) -> tuple[object, bool]:
    """Runs ``handler(m)`` and returns its result, or the exception it raised, and whether it
    raised (an Outcome may be returned or raised). With
    OpenTelemetry and a valid ``m.traceparent`` it runs under a ``process <queue>`` span, the
    child of that context; a retry or dead-letter outcome sets the span's status to ERROR
    with the outcome's kind (as the Go SDK does for a handler's error), and a raised
    exception is recorded."""
    trace, cm = _process_span(queue, m)
    if cm is None:
        try:
            return handler(m), False
        except BaseException as e:  # noqa: BLE001 - a handler's failure is a retry
            return e, True
    with cm as span:
        raised = False
        try:
            result: object = handler(m)
        except BaseException as e:  # noqa: BLE001 - a handler's failure is a retry
            result, raised = e, True
        _end_span(trace, span, result, raised, outcome_of)
        return result, raised


async def run_handler_async(queue: str, m: Any, handler: Callable[[Any], Awaitable[object]],
                            outcome_of: Callable[[object], tuple[Any, BaseException | None]]) -> tuple[object, bool]:
    """run_handler for a coroutine handler (AsyncConsumer, handle_push_async): the same span,
    current while the handler is awaited; a cancellation is raised, not returned."""
    trace, cm = _process_span(queue, m)
    if cm is None:
        try:
            return await handler(m), False
        except asyncio.CancelledError:
            raise
        except BaseException as e:  # noqa: BLE001 - a handler's failure is a retry
            return e, True
    with cm as span:
        raised = False
        try:
            result: object = await handler(m)
        except asyncio.CancelledError:
            raise
        except BaseException as e:  # noqa: BLE001 - a handler's failure is a retry
            result, raised = e, True
        _end_span(trace, span, result, raised, outcome_of)
        return result, raised
