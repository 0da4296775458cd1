"""The API's resources as dataclasses. Field names are the JSON names in snake_case
(``messageId`` is ``message_id``); times stay RFC 3339 strings as the API writes them
(``datetime.fromisoformat`` reads them). A field the SDK does not know yet is kept in
``extra`` rather than dropped, so an older SDK still sees what a newer server sends."""

from __future__ import annotations

import builtins
import dataclasses
import functools
import re
from dataclasses import dataclass, field
from typing import Any, ClassVar, Generic, TypeVar

from .errors import QueuesError

_CAMEL = re.compile(r"(?<!^)(?=[A-Z])")


@functools.lru_cache(maxsize=1024)
def snake(name: str) -> str:
    """``visibilityTimeoutSeconds`` → ``visibility_timeout_seconds`` (cached: a consumer
    converts the same dozen names for every message it receives)."""
    return _CAMEL.sub("_", name).lower()


# Each Model class's field names, computed once (dataclasses.fields is slow per message).
_FIELDS: dict[type, frozenset[str]] = {}


def camel(name: str) -> str:
    """``visibility_timeout_seconds`` → ``visibilityTimeoutSeconds``."""
    head, *rest = name.split("_")
    return head + "".join(p[:1].upper() + p[1:] for p in rest)


T = TypeVar("T", bound="Model")


class Model:
    """Base of the resources: ``from_dict`` maps JSON onto the dataclass fields."""

    # Nested resources: JSON name → type (a list of them when the JSON value is a list).
    _nested: ClassVar[dict[str, type["Model"]]] = {}

    @classmethod
    def from_dict(cls: type[T], d: dict[str, Any] | None) -> T:
        if d is None:
            return None  # type: ignore[return-value]
        names = _FIELDS.get(cls)
        if names is None:
            names = _FIELDS[cls] = frozenset(f.name for f in dataclasses.fields(cls))  # type: ignore[arg-type]
        kw: dict[str, Any] = {}
        extra: dict[str, Any] = {}
        for k, v in d.items():
            n = snake(k)
            if k in cls._nested and v is not None:
                sub = cls._nested[k]
                v = [sub.from_dict(x) for x in v] if isinstance(v, list) else sub.from_dict(v)
            if n in names and n != "extra":
                kw[n] = v
            else:
                extra[k] = v
        obj = cls(**kw)
        if "extra" in names:
            obj.extra = extra  # type: ignore[attr-defined]
        return obj

    def to_dict(self) -> dict[str, Any]:
        """The JSON object (camelCase names; ``extra`` merged back)."""
        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):  # type: ignore[arg-type]
            v = getattr(self, f.name)
            if f.name == "extra":
                out.update(v)
                continue
            if isinstance(v, Model):
                v = v.to_dict()
            elif isinstance(v, list):
                v = [x.to_dict() if isinstance(x, Model) else x for x in v]
            out[camel(f.name)] = v
        return out


@dataclass
class Limits(Model):
    max_queues: int | None = None
    max_subscriptions: int | None = None
    max_stored_bytes: int | None = None
    requests_per_second: int | None = None
    max_waiting_receives: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class ProjectUsage(Model):
    queues: int = 0
    subscriptions: int = 0
    stored_bytes: int = 0
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class Project(Model):
    """A project; ``limits`` and ``usage`` are set on the single-project answers (docs/tenancy.md)."""

    id: str = ""
    slug: str = ""
    name: str = ""
    created_at: str = ""
    limits: Limits | None = None
    usage: ProjectUsage | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    _nested: ClassVar[dict[str, type[Model]]] = {"limits": Limits, "usage": ProjectUsage}


@dataclass
class UsageHour(Model):
    """One project's metered counters for one UTC hour."""

    hour: str = ""
    requests: int = 0
    messages_sent: int = 0
    messages_delivered: int = 0
    messages_acked: int = 0
    bytes_in: int = 0
    bytes_out: int = 0
    push_attempts: int = 0
    stored_byte_hours: int = 0
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class TokenCreated(Model):
    """A new project token: ``token`` is the bearer credential, shown this once."""

    id: str = ""
    slug: str = ""
    name: str = ""
    token: str = ""
    scopes: list[str] = field(default_factory=list)
    created_at: str = ""
    expires_at: str | None = None
    sqs_secret_access_key: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class Redrive(Model):
    dead_letter_queue: str = ""
    max_receive_count: int = 0
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class QueueCounts(Model):
    visible: int = 0
    in_flight: int = 0
    delayed: int = 0
    truncated: bool = False
    oldest_message_age_seconds: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class Queue(Model):
    id: str = ""
    slug: str = ""
    name: str = ""
    type: str = "standard"
    created_at: str = ""
    updated_at: str = ""
    visibility_timeout_seconds: int = 0
    retention_seconds: int = 0
    delay_seconds: int = 0
    receive_wait_seconds: int = 0
    redrive: Redrive | None = None
    content_based_dedup: bool = False
    fairness: str = "fast"
    #: How many times a message may be cancelled; the cancel beyond it dead-letters it.
    max_cancels: int = 10
    #: The largest message, body and attributes together, in bytes (1,024–1,048,576).
    max_message_bytes: int = 262144
    #: Fifo queues: ``"sequenced"`` or ``"exclusive"`` (docs/fifo.md "Group policies"), with
    #: the binding's affinity and each consumer's cap; None on standard queues.
    group_policy: str | None = None
    group_affinity_seconds: int | None = None
    max_groups_per_consumer: int | None = None
    #: Fifo poison policy: ``"continue"``, ``"park"`` or ``"parkGroup"`` (docs/fifo.md).
    on_dead_letter: str = "continue"
    #: ``"atLeastOnce"`` or ``"atMostOnce"`` (fixed at creation, standard queues only).
    delivery: str = "atLeastOnce"
    partitions: int = 0
    counts: QueueCounts = field(default_factory=QueueCounts)
    extra: dict[str, Any] = field(default_factory=dict)
    # builtins.type: this class's own field ``type`` shadows the name here.
    _nested: ClassVar[dict[str, builtins.type[Model]]] = {"redrive": Redrive, "counts": QueueCounts}


@dataclass
class PurgeResult(Model):
    purged_at: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class DeadLetterInfo(Model):
    source_queue: str = ""
    reason: str = ""
    at: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class ReplayOf(Model):
    """On a message a topic's replay copied: the topic's id and the log entry's sequence (the
    copy has a message id of its own)."""

    topic: str = ""
    sequence: int = 0
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class Message(Model):
    """A received (or pushed) message; ``receipt_handle`` settles this delivery. On an
    at-most-once queue ``receipt_handle`` and ``visibility_deadline`` are empty: the receive
    removed the message, so there is nothing to settle."""

    message_id: str = ""
    body: str = ""
    attributes: dict[str, str] = field(default_factory=dict)
    receipt_handle: str = ""
    receive_count: int = 0
    sent_at: str = ""
    visibility_deadline: str = ""
    group_id: str | None = None
    sequence_number: str | None = None
    dead_letter: DeadLetterInfo | None = None
    #: The W3C traceparent stored with the message (its producer's context), if any.
    traceparent: str | None = None
    #: The message's priority, 0 to 9 (standard queues; None on fifo queues).
    priority: int | None = None
    #: On a message a topic's replay copied: the log entry it copies.
    replay_of: ReplayOf | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    _nested: ClassVar[dict[str, type[Model]]] = {"deadLetter": DeadLetterInfo, "replayOf": ReplayOf}


@dataclass
class BrowsedMessage(Model):
    """A message seen without leasing it (no receipt handle)."""

    message_id: str = ""
    body: str = ""
    attributes: dict[str, str] = field(default_factory=dict)
    receive_count: int = 0
    sent_at: str = ""
    state: str = ""
    visible_at: str = ""
    group_id: str | None = None
    sequence_number: str | None = None
    dead_letter: DeadLetterInfo | None = None
    #: The W3C traceparent stored with the message (its producer's context), if any.
    traceparent: str | None = None
    #: The message's priority, 0 to 9 (standard queues; None on fifo queues).
    priority: int | None = None
    #: On a message a topic's replay copied: the log entry it copies.
    replay_of: ReplayOf | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    _nested: ClassVar[dict[str, type[Model]]] = {"deadLetter": DeadLetterInfo, "replayOf": ReplayOf}


@dataclass
class Group(Model):
    group_id: str = ""
    messages: int = 0
    in_flight: bool = False
    #: On an exclusive queue, the consumer the group is bound to (None: not bound).
    consumer_id: str | None = None
    #: ``"active"``, or ``"parked"`` while a poison policy (``on_dead_letter``) holds it.
    state: str = "active"
    #: The receiveCount of the group's first message.
    receive_count: int = 0
    #: The reason of the dead-letter that parked the group (None while active).
    last_error: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class ConsumerInfo(Model):
    """A consumer that named itself on a receive in the last 5 minutes (docs/delivery-options.md#consumers-backlogs-and-fairness)."""

    consumer_id: str = ""
    in_flight: int = 0
    max_backlog: int | None = None
    last_seen_at: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class FlowControl(Model):
    """Keyed flow control: messages whose attribute ``key_attribute`` has the same value share one
    key's budget of ``parallelism`` pushes in flight and ``messages_per_second`` (0: no bound)."""

    key_attribute: str = ""
    parallelism: int = 1
    messages_per_second: int = 0
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class PushAuth(Model):
    """Token auth of a subscription: each push carries ``Authorization: Bearer <JWT>`` signed by
    the service, whose ``aud`` is ``audience`` (the endpoint URL unless set); ``type`` is "oidc"."""

    type: str = "oidc"
    audience: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class PushError(Model):
    """The last failed push attempt of a subscription (``SubscriptionHealth.last_error``):
    ``status`` is the HTTP status, None when no response came; ``error`` the class
    (http_status, timeout, connection_error, …)."""

    status: int | None = None
    error: str = ""
    message: str = ""
    at: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class SubscriptionHealth(Model):
    """The endpoint's health as the pusher fleet records it (GET only). A success rate is None
    when its window (5 minutes, 24 hours) had no attempt; ``flow_control_limit`` is the batches
    the subscription may have in flight now; ``throttled_until`` the end of the endpoint's last
    Retry-After while it lasts."""

    _nested: ClassVar[dict[str, type[Model]]] = {"lastError": PushError}

    success_rate5m: float | None = None
    success_rate24h: float | None = None
    attempts5m: int = 0
    attempts24h: int = 0
    last_success_at: str | None = None
    last_error: PushError | None = None
    consecutive_failures: int = 0
    failing_since: str | None = None
    flow_control_limit: int = 0
    throttled_until: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class Subscription(Model):
    """A queue's push subscription; ``signing_secret`` only on create and rotate-secret.

    ``state`` is "active" or "disabled" (every attempt failed for ``disable_after_seconds``, or
    a PATCH disabled it: ``disabled_reason``, ``disabled_at``). ``signing`` is "hmac" (v1, the
    shared ``signing_secret``) or "ed25519" (v1a, verified with ``signing_public_key``,
    ``whpk_…``); ``auth`` adds a push token (docs/push.md)."""

    _nested: ClassVar[dict[str, type[Model]]] = {"flowControl": FlowControl, "health": SubscriptionHealth,
                                                 "auth": PushAuth}

    id: str = ""
    slug: str = ""
    queue: str = ""
    endpoint: str = ""
    batch_size: int = 0
    batch_window_ms: int = 0
    max_in_flight: int = 0
    timeout_seconds: int = 0
    paused: bool = False
    # Endpoint health (docs/push.md).
    disable_after_seconds: int = 0
    state: str = "active"
    disabled_reason: str | None = None
    disabled_at: str | None = None
    health: SubscriptionHealth | None = None
    # Rate and keyed flow control (docs/push.md).
    max_messages_per_second: int = 0
    flow_control: FlowControl | None = None
    created_at: str = ""
    updated_at: str = ""
    # Signatures and token auth (docs/push.md).
    signing: str = "hmac"
    signing_public_key: str | None = None
    # For 24 hours after a rotation, the replaced key that still signs beside the new one.
    previous_signing_public_key: str | None = None
    previous_signing_public_key_expires_at: str | None = None
    auth: PushAuth | None = None
    signing_secret: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class PushAttempt(Model):
    at: str = ""
    attempt_id: str = ""
    message_ids: list[str] = field(default_factory=list)
    status_code: int | None = None
    latency_ms: int | None = None
    outcome: str = ""
    error: str | None = None
    detail: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class MoveFilter(Model):
    """Which messages a move task moves; every field given must match. ``sent_after`` and
    ``sent_before`` are RFC 3339 strings (or aware datetimes); an ``attributes`` value may be
    a list, matching any of its values."""

    reason: str | None = None
    sent_after: Any = None
    sent_before: Any = None
    group_id: str | None = None
    attributes: dict[str, Any] | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object, without the fields left None."""
        d: dict[str, Any] = {}
        for k, v in super().to_dict().items():
            if v is None:
                continue
            d[k] = v if isinstance(v, (str, dict, list)) or not hasattr(v, "isoformat") else v.isoformat()
        return d


@dataclass
class MoveTask(Model):
    """A move task (redrive and replay, docs/redrive.md) and its progress: ``status`` is
    running, completed, cancelled or failed; ``destination`` None sends each message back to
    its dead-letter source queue; ``action`` is move or delete (``moved`` then counts the
    deleted messages)."""

    id: str = ""
    status: str = ""
    source: str = ""
    destination: str | None = None
    filter: MoveFilter | None = None
    action: str = "move"
    max_messages_per_second: int = 0
    dry_run: bool = False
    moved: int = 0
    to_move: int = 0
    failed: int = 0
    error: str | None = None
    started_at: str = ""
    finished_at: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    _nested: ClassVar[dict[str, type[Model]]] = {"filter": MoveFilter}


@dataclass
class SentMessage(Model):
    """A stored message of a send; ``sequence_number`` (fifo only, a decimal string) is the
    one its receives carry, a duplicate's the original's."""

    index: int = 0
    message_id: str = ""
    duplicate: bool = False
    merged: bool = False
    sequence_number: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class FailedMessage:
    index: int
    error: QueuesError


@dataclass
class SendResult:
    """A batch send's answer: each message either stored (``messages``) or ``failed``."""

    messages: list[SentMessage]
    failed: list[FailedMessage]

    def raise_for_failed(self) -> None:
        """Raises the first failed message's error, if any."""
        if self.failed:
            raise self.failed[0].error


P = TypeVar("P")


@dataclass
class Page(Generic[P]):
    """One page of a list; ``next_cursor`` is None exactly when no further item exists."""

    items: list[P]
    next_cursor: str | None


@dataclass
class SendMessage:
    """One message to send: ``delay_seconds`` (up to the queue's retention) or ``deliver_at``
    (an aware datetime or an RFC 3339 string), ``key`` and ``merge`` (``"replace"`` or
    ``"patch"``) on standard queues; ``group_id`` required and ``dedup_id`` optional on fifo
    queues."""

    body: str
    attributes: dict[str, str] | None = None
    delay_seconds: int | None = None
    group_id: str | None = None
    dedup_id: str | None = None
    deliver_at: Any = None
    key: str | None = None
    merge: str | None = None
    #: A W3C traceparent to store with the message (default: the current span's, when the
    #: program has OpenTelemetry; else none).
    traceparent: str | None = None
    #: a barrier message (standard queues): delivered once every message sent before it has
    #: left the queue; holds back every message sent after it until it has left.
    barrier: bool = False
    #: 0 (default) to 9 (standard queues): receives and pushes take the highest first.
    priority: int | None = None
    #: fifo queues: on an exclusive queue, settling this message (ack or dead-letter) ends
    #: its group's binding to its consumer.
    end_group: bool = False

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"body": self.body}
        if self.attributes:
            d["attributes"] = self.attributes
        if self.delay_seconds is not None:
            d["delaySeconds"] = self.delay_seconds
        if self.group_id is not None:
            d["groupId"] = self.group_id
        if self.dedup_id is not None:
            d["dedupId"] = self.dedup_id
        if self.deliver_at is not None:
            d["deliverAt"] = self.deliver_at if isinstance(self.deliver_at, str) else self.deliver_at.isoformat()
        if self.key is not None:
            d["key"] = self.key
        if self.merge is not None:
            d["merge"] = self.merge
        if self.traceparent is not None:
            d["traceparent"] = self.traceparent
        if self.barrier:
            d["barrier"] = True
        if self.priority is not None:
            d["priority"] = self.priority
        if self.end_group:
            d["endGroup"] = True
        return d
