"""Push receivers: Standard Webhooks verification and a framework-agnostic push handler.

``handle_push`` takes what any Python web framework gives (the headers, the raw body) and
returns ``(status, headers, body)`` for it to answer, so one function serves WSGI, ASGI,
``http.server``, Flask, Django, FastAPI or a serverless function alike."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping, Sequence

from .consumer import Outcome, RetryAfter, outcome_of, seconds_up
from . import tracing
from .errors import WebhookVerificationError
from .models import Message

HEADER_ID, HEADER_TIMESTAMP, HEADER_SIGNATURE = "webhook-id", "webhook-timestamp", "webhook-signature"
DEFAULT_TOLERANCE_SECONDS = 300

HeadersLike = Mapping[str, str] | Iterable[tuple[Any, Any]]


def _headers(headers: HeadersLike) -> dict[str, str]:
    """Lower-cased header names → values, from a mapping (a dict, http.server's or
    email.Message headers, a WSGI environ with HTTP_WEBHOOK_ID keys) or (name, value) pairs
    (ASGI's byte pairs included)."""
    items = headers.items() if hasattr(headers, "items") else headers
    out: dict[str, str] = {}
    for k, v in items:
        if isinstance(k, bytes):
            k = k.decode("latin-1")
        if isinstance(v, bytes):
            v = v.decode("latin-1")
        if not isinstance(k, str) or not isinstance(v, str):
            continue
        k = k.lower()
        if k.startswith("http_"):  # WSGI environ
            k = k[5:].replace("_", "-")
        out.setdefault(k, v)
    return out


def _key(secret: str) -> bytes:
    if not secret.startswith("whsec_"):
        raise WebhookVerificationError("a signing secret is not whsec_<base64>")
    try:
        key = base64.b64decode(secret[6:], validate=True)
    except ValueError as e:
        raise WebhookVerificationError("a signing secret is not whsec_<base64>") from e
    if not key:
        raise WebhookVerificationError("a signing secret is empty")
    return key


def _mac(key: bytes, msg_id: str, timestamp: str, body: bytes) -> bytes:
    return hmac.new(key, msg_id.encode() + b"." + timestamp.encode() + b"." + body, hashlib.sha256).digest()


def sign(secret: str, msg_id: str, timestamp: int, body: bytes) -> str:
    """The ``webhook-signature`` value (``v1,<base64>``) of a push signed with secret; tests
    of a receiver use it to play the pusher."""
    return "v1," + base64.b64encode(_mac(_key(secret), msg_id, str(int(timestamp)), body)).decode()


def verify(secrets: str | Sequence[str | None], headers: HeadersLike, raw_body: bytes, *,
           tolerance_seconds: float = DEFAULT_TOLERANCE_SECONDS, now: float | None = None) -> None:
    """Checks a push's Standard Webhooks signature, raising WebhookVerificationError unless:
    the three headers are present, ``webhook-timestamp`` is unix seconds within
    ``tolerance_seconds`` of now, and one of the space-separated ``v1,<base64>`` signatures
    is the HMAC-SHA256 of ``id.timestamp.body`` under one of ``secrets`` (the current and,
    for 24 h after a rotation, the previous; None and empty ones are skipped). Signatures
    are compared in constant time. ``raw_body`` must be the bytes as received."""
    if isinstance(secrets, str):
        secrets = [secrets]
    h = _headers(headers)
    msg_id, ts, sigs = h.get(HEADER_ID, ""), h.get(HEADER_TIMESTAMP, ""), h.get(HEADER_SIGNATURE, "")
    if not msg_id or not ts or not sigs:
        raise WebhookVerificationError("missing webhook-id, webhook-timestamp or webhook-signature")
    if not ts.isascii() or not ts.isdigit():
        raise WebhookVerificationError("webhook-timestamp is not unix seconds")
    now = time.time() if now is None else now
    if abs(now - int(ts)) > tolerance_seconds:
        raise WebhookVerificationError("webhook-timestamp is outside the tolerance")
    given: list[bytes] = []
    for s in sigs.split():
        version, _, b64 = s.partition(",")
        if version != "v1":
            continue
        try:
            given.append(base64.b64decode(b64, validate=True))
        except ValueError:
            continue
    if isinstance(raw_body, str):
        raw_body = raw_body.encode()
    keys = [_key(s) for s in secrets if s]
    if not keys:
        raise WebhookVerificationError("no signing secret to verify with")
    ok = False
    for key in keys:
        want = _mac(key, msg_id, ts, bytes(raw_body))
        for sig in given:
            # Every pair is compared (no early exit), each in constant time.
            ok |= hmac.compare_digest(sig, want)
    if not ok:
        raise WebhookVerificationError("no signature matches a signing secret")


@dataclass
class PushBatch:
    """The body of a push: the subscription's slug, the queue, the messages."""

    subscription: str
    queue: dict[str, Any]
    messages: list[Message]


def _json(status: int, value: Any) -> tuple[int, list[tuple[str, str]], bytes]:
    body = json.dumps(value, separators=(",", ":")).encode()
    return status, [("Content-Type", "application/json"), ("Content-Length", str(len(body)))], body


def _error(status: int, code: str, message: str) -> tuple[int, list[tuple[str, str]], bytes]:
    return _json(status, {"error": {"code": code, "message": message}})


def push_result(m: Message, result: object,
                error_retry_after: Callable[[Message, BaseException], float] | None = None) -> dict[str, Any]:
    """One message's entry of a push answer, from its handler's result."""
    try:
        o, err = outcome_of(result)
    except TypeError as e:
        o, err = outcome_of(e)
    if err is not None and error_retry_after is not None:
        o = RetryAfter(error_retry_after(m, err))
    r: dict[str, Any] = {"messageId": m.message_id, "outcome": o.kind}
    if o.kind == "retry" and seconds_up(o.delay) > 0:
        r["retryAfterSeconds"] = seconds_up(o.delay)
    if o.kind == "dead-letter" and o.reason:
        r["reason"] = o.reason
    return r


Answer = tuple[int, list[tuple[str, str]], bytes]


def verified_batch(secrets: str | Sequence[str | None], headers: HeadersLike, raw_body: bytes, *,
                   tolerance_seconds: float = DEFAULT_TOLERANCE_SECONDS,
                   on_error: Callable[[BaseException], None] | None = None) -> PushBatch | Answer:
    """The push's batch once it verifies and parses, else the answer to give (401 when the
    signature does not verify, 400 when the body is not a batch)."""
    try:
        verify(secrets, headers, raw_body, tolerance_seconds=tolerance_seconds)
    except WebhookVerificationError as e:
        if on_error:
            on_error(e)
        return _error(401, "unauthenticated", "the push signature does not verify")
    try:
        doc = json.loads(raw_body)
        return PushBatch(doc["subscription"], doc["queue"], [Message.from_dict(m) for m in doc["messages"]])
    except (ValueError, KeyError, TypeError, AttributeError) as e:
        if on_error:
            on_error(e)
        return _error(400, "invalid_argument", "the push body is not a batch")


def group_lanes(messages: Sequence[Message]) -> list[list[int]]:
    """The messages' indexes in lanes that may run at once: one lane per fifo message group
    (in order within it), one per ungrouped message."""
    lanes: list[list[int]] = []
    by_group: dict[str, int] = {}
    for i, m in enumerate(messages):
        if not m.group_id:
            lanes.append([i])
            continue
        if m.group_id not in by_group:
            by_group[m.group_id] = len(lanes)
            lanes.append([])
        lanes[by_group[m.group_id]].append(i)
    return lanes


def json_answer(value: Any) -> Answer:
    """A 200 JSON answer (the push answer's form)."""
    return _json(200, value)


def handle_push(secrets: str | Sequence[str | None], headers: HeadersLike, raw_body: bytes,
                handler: Callable[[Message], Outcome | None], *,
                tolerance_seconds: float = DEFAULT_TOLERANCE_SECONDS, concurrency: int = 10,
                error_retry_after: Callable[[Message, BaseException], float] | None = None,
                on_error: Callable[[BaseException], None] | None = None,
                ) -> tuple[int, list[tuple[str, str]], bytes]:
    """Handles one push: verifies it (401 when it does not verify), runs ``handler`` for each
    message — in order within a message group, up to ``concurrency`` groups or ungrouped
    messages at once — and answers 200 ``{"results": [{"messageId", "outcome", …}]}`` with
    each message's outcome from its handler's result, as the consumer settles it (an
    exception is a retry; ``Defer()`` answers "defer", leaving the message for the
    application to settle by its receipt handle). Returns (status, headers, body)."""
    checked = verified_batch(secrets, headers, raw_body, tolerance_seconds=tolerance_seconds, on_error=on_error)
    if not isinstance(checked, PushBatch):
        return checked
    batch = checked
    queue = str(batch.queue.get("name", "")) if isinstance(batch.queue, dict) else ""
    lanes = group_lanes(batch.messages)
    results: list[dict[str, Any]] = [{} for _ in batch.messages]

    def run_lane(lane: list[int]) -> None:
        for i in lane:
            m = batch.messages[i]
            result, raised = tracing.run_handler(queue, m, handler, outcome_of)
            if raised and on_error:
                on_error(result)  # type: ignore[arg-type]
            results[i] = push_result(m, result, error_retry_after)

    if len(lanes) <= 1 or concurrency <= 1:
        for lane in lanes:
            run_lane(lane)
    else:
        with ThreadPoolExecutor(max_workers=min(concurrency, len(lanes))) as pool:
            list(pool.map(run_lane, lanes))
    return _json(200, {"results": results})
