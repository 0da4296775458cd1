"""The topic resources (docs/topics.md): a publish appends to a topic's log, and
every queue bound to the topic receives its own copy of each message its binding's filter
selects."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from .errors import QueuesError
from .models import FailedMessage, Model


@dataclass
class Topic(Model):
    """A topic's settings and the state of its log: ``first_sequence`` is the oldest sequence
    the log holds (``last_sequence + 1`` when it holds none), ``last_sequence`` the last one
    assigned (0 before the first publish)."""

    id: str = ""
    slug: str = ""
    name: str = ""
    type: str = "standard"
    retention_seconds: int = 0
    created_at: str = ""
    updated_at: str = ""
    first_sequence: int = 0
    last_sequence: int = 0
    stored_bytes: int = 0
    bindings: int = 0
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class BindingFailure(Model):
    """Why the queue last refused a binding's copy, and when."""

    reason: str = ""
    at: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class Binding(Model):
    """A queue's source: one topic, its filter (``{"attributes": {name: value or [values]}}``
    or None), where it started (``from_`` as asked, ``start_sequence``), the last sequence it
    handled (``sequence``), ``lag`` behind the topic, and what it ``copied`` and ``failed``."""

    id: str = ""
    slug: str = ""
    queue_id: str = ""
    queue: str = ""
    topic_id: str = ""
    topic: str = ""
    filter: dict[str, Any] | None = None
    from_: Any = None
    start_sequence: int = 0
    sequence: int = 0
    lag: int = 0
    copied: int = 0
    failed: int = 0
    last_failure: BindingFailure | None = None
    created_at: str = ""
    updated_at: str = ""
    extra: dict[str, Any] = field(default_factory=dict)
    _nested: ClassVar[dict[str, type[Model]]] = {"lastFailure": BindingFailure}

    @classmethod
    def from_dict(cls, d: dict[str, Any] | None) -> "Binding":
        if d is not None and "from" in d:  # a Python keyword: the field is from_
            d = {("from_" if k == "from" else k): v for k, v in d.items()}
        return super().from_dict(d)


@dataclass
class Replay(Model):
    """A replay of a topic's log range ``from_``..``to`` (inclusive sequences) into a queue
    (``queue`` is its name, None once it is deleted), with a move task's lifecycle: ``status``
    running, completed, cancelled or failed (``error`` says why); ``to_move`` counts the
    entries the filter selects, ``moved`` the copies stored, ``failed`` those refused."""

    id: str = ""
    topic_id: str = ""
    topic: str = ""
    queue_id: str = ""
    queue: str | None = None
    from_: int = 0
    to: int = 0
    filter: dict[str, Any] | None = None
    status: str = ""
    moved: int = 0
    to_move: int = 0
    failed: int = 0
    max_messages_per_second: int = 0
    dry_run: bool = False
    started_at: str = ""
    finished_at: str | None = None
    error: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, d: dict[str, Any] | None) -> "Replay":
        if d is not None and "from" in d:  # a Python keyword: the field is from_
            d = {("from_" if k == "from" else k): v for k, v in d.items()}
        return super().from_dict(d)


@dataclass
class LogEntry(Model):
    """One published message as the log keeps it; ``deleted`` marks a keyed publish of a
    null body (``body`` is None), which deleted the key's state."""

    sequence: int = 0
    message_id: str = ""
    body: str | None = None
    attributes: dict[str, str] = field(default_factory=dict)
    published_at: str = ""
    group_id: str | None = None
    dedup_id: str | None = None
    key: str | None = None
    deleted: bool = False
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class StateEntry(Model):
    """One key's latest state: the last message published with it (merged, for patches)."""

    key: str = ""
    body: str = ""
    attributes: dict[str, str] = field(default_factory=dict)
    sequence: int = 0
    published_at: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class PublishedMessage(Model):
    """A published message by its index in the request, at ``sequence`` in the log;
    ``duplicate`` (fifo): a repeated dedup id, answered with the first publish's id and
    sequence."""

    index: int = 0
    message_id: str = ""
    sequence: int = 0
    duplicate: bool = False
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class PublishResult:
    """A publish's answer: each message either published (``messages``) or ``failed``."""

    messages: list[PublishedMessage]
    failed: list[FailedMessage]

    def raise_for_failed(self) -> None:
        """Raises the first failed message's error, if any."""
        if self.failed:
            raise self.failed[0].error

    @classmethod
    def from_answer(cls, a: dict[str, Any]) -> "PublishResult":
        return cls([PublishedMessage.from_dict(m) for m in a.get("messages", [])],
                   [FailedMessage(f["index"], QueuesError.from_body(f.get("error"))) for f in a.get("failed", [])])


@dataclass
class PublishMessage:
    """One message to publish. ``body`` None (only with ``key``) deletes the key's state;
    ``merge`` (with ``key``) is ``"replace"`` (default) or ``"patch"``; ``group_id`` is
    required and ``dedup_id`` optional on fifo topics."""

    body: str | None
    attributes: dict[str, str] | None = None
    group_id: str | None = None
    dedup_id: str | None = None
    key: str | None = None
    merge: str | None = None

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"body": self.body}
        if self.attributes:
            d["attributes"] = self.attributes
        for name, v in (("groupId", self.group_id), ("dedupId", self.dedup_id), ("key", self.key), ("merge", self.merge)):
            if v is not None:
                d[name] = v
        return d
