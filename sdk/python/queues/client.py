"""The typed client: one method per route of the Queues API."""

from __future__ import annotations

import os
import ssl
import urllib.parse
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence

from ._http import RetryPolicy, Transport
from ._version import __version__
from .errors import QueuesError
from .models import (BrowsedMessage, ConsumerInfo, FailedMessage, FlowControl, Group, Limits, Message, MoveFilter, MoveTask, Page, Project,
                     PurgeResult, PushAttempt, PushAuth, Queue, SendMessage, SendResult, SentMessage, Subscription, TokenCreated,
                     UsageHour)
from .topics import Binding, LogEntry, PublishedMessage, PublishMessage, PublishResult, Replay, StateEntry, Topic
from .topicstream import DEFAULT_WINDOW, TopicStream, TopicStreamConnection, stream_query

ENV_URL, ENV_TOKEN = "QUEUES_URL", "QUEUES_TOKEN"
DEFAULT_URL = "http://127.0.0.1:8080"
MAX_SEND_BATCH, MAX_RECEIVE_BATCH, MAX_RECEIPT_BATCH = 10, 10, 100
SCOPE_ALL = "*"
# What every request says it is (the version lets the service's logs tell SDK releases apart).
USER_AGENT = "queues-python/" + __version__


class _Unset:
    def __repr__(self) -> str:
        return "UNSET"


UNSET: Any = _Unset()
"""Marks a setting left as it is in an update (None is a value: ``redrive=None`` removes it)."""

# Every route the client calls, as (method, path template) → the Client method that calls
# it. tests/test_drift.py checks it against openapi.yaml both ways, so a route added to the
# API without a method here, or a method here for a route the API lost, fails a test.
ROUTES: dict[tuple[str, str], str] = {
    ("POST", "/v1/projects"): "create_project",
    ("GET", "/v1/projects"): "list_projects",
    ("GET", "/v1/projects/{project}"): "get_project",
    ("PATCH", "/v1/projects/{project}"): "update_project",
    ("GET", "/v1/projects/{project}/usage"): "get_project_usage",
    ("GET", "/v1/project"): "get_own_project",
    ("GET", "/v1/project/usage"): "get_own_usage",
    ("POST", "/v1/projects/{project}/tokens"): "create_token",
    ("DELETE", "/v1/projects/{project}/tokens/{token}"): "revoke_token",
    ("GET", "/v1/projects/{project}/tokens/{token}/sqs-credentials"): "get_sqs_credentials",
    ("POST", "/v1/queues"): "create_queue",
    ("GET", "/v1/queues"): "list_queues",
    ("GET", "/v1/queues/{queue}"): "get_queue",
    ("PATCH", "/v1/queues/{queue}"): "update_queue",
    ("DELETE", "/v1/queues/{queue}"): "delete_queue",
    ("POST", "/v1/queues/{queue}/purge"): "purge_queue",
    ("POST", "/v1/queues/{queue}/messages"): "send_batch",
    ("GET", "/v1/queues/{queue}/messages"): "browse",
    ("DELETE", "/v1/queues/{queue}/messages/{messageId}"): "delete_message",
    ("POST", "/v1/queues/{queue}/receive"): "receive",
    ("GET", "/v1/queues/{queue}/groups"): "list_groups",
    ("GET", "/v1/queues/{queue}/consumers"): "list_consumers",
    ("DELETE", "/v1/queues/{queue}/groups/{groupId}"): "delete_group",
    ("POST", "/v1/queues/{queue}/groups/{groupId}/release"): "release_group",
    ("POST", "/v1/queues/{queue}/subscription"): "create_subscription",
    ("GET", "/v1/queues/{queue}/subscription"): "get_subscription",
    ("PATCH", "/v1/queues/{queue}/subscription"): "update_subscription",
    ("DELETE", "/v1/queues/{queue}/subscription"): "delete_subscription",
    ("POST", "/v1/queues/{queue}/subscription/rotate-secret"): "rotate_subscription_secret",
    ("GET", "/v1/queues/{queue}/subscription/attempts"): "list_subscription_attempts",
    ("POST", "/v1/queues/{queue}/move-tasks"): "start_move_task",
    ("GET", "/v1/queues/{queue}/move-tasks"): "list_move_tasks",
    ("GET", "/v1/queues/{queue}/move-tasks/{task}"): "get_move_task",
    ("POST", "/v1/queues/{queue}/move-tasks/{task}/cancel"): "cancel_move_task",
    ("POST", "/v1/receipts/ack"): "ack_batch",
    ("POST", "/v1/receipts/visibility"): "change_visibility_batch",
    ("POST", "/v1/receipts/dead-letter"): "dead_letter_batch",
    ("POST", "/v1/receipts/cancel"): "cancel_batch",
    ("POST", "/v1/topics"): "create_topic",
    ("GET", "/v1/topics"): "list_topics",
    ("GET", "/v1/topics/{topic}"): "get_topic",
    ("PATCH", "/v1/topics/{topic}"): "update_topic",
    ("DELETE", "/v1/topics/{topic}"): "delete_topic",
    ("POST", "/v1/topics/{topic}/messages"): "publish_batch",
    ("GET", "/v1/topics/{topic}/messages"): "read_log",
    ("GET", "/v1/topics/{topic}/state"): "list_state",
    ("GET", "/v1/topics/{topic}/bindings"): "topic_bindings",
    ("GET", "/v1/topics/{topic}/stream"): "topic_stream",  # a WebSocket (queues/_ws.py)
    ("POST", "/v1/topics/{topic}/replays"): "start_replay",
    ("GET", "/.well-known/jwks.json"): "push_jwks",
    ("GET", "/v1/topics/{topic}/replays"): "list_replays",
    ("GET", "/v1/topics/{topic}/replays/{replay}"): "get_replay",
    ("POST", "/v1/topics/{topic}/replays/{replay}/cancel"): "cancel_replay",
    ("POST", "/v1/queues/{queue}/sources"): "bind",
    ("GET", "/v1/queues/{queue}/sources"): "list_sources",
    ("GET", "/v1/queues/{queue}/sources/{binding}"): "get_source",
    ("PATCH", "/v1/queues/{queue}/sources/{binding}"): "update_source_filter",
    ("DELETE", "/v1/queues/{queue}/sources/{binding}"): "unbind",
    ("GET", "/healthz"): "health",
    ("GET", "/readyz"): "ready",
}


def _seg(s: str) -> str:
    return urllib.parse.quote(str(s), safe="")


def filter_body(f: Mapping[str, str | Sequence[str]]) -> dict[str, Any]:
    """The receive body's form of a filter: {"attributes": {name: value or [values]}}."""
    return {"attributes": {k: v if isinstance(v, str) else list(v) for k, v in f.items()}}


def _q(queue: str) -> str:
    return "/v1/queues/" + _seg(queue)


def _t(topic: str) -> str:
    return "/v1/topics/" + _seg(topic)


def _position(v: Any) -> str | None:
    """A position in a topic's log for a query or body: a sequence, an RFC 3339 string, or
    an aware datetime."""
    if v is None or isinstance(v, str):
        return v
    if isinstance(v, int):
        return str(v)
    return v.isoformat()


def _filter_query(query: dict[str, Any], f: Mapping[str, str | Sequence[str]] | None) -> dict[str, Any]:
    for name, values in (f or {}).items():
        query["attribute." + name] = [values] if isinstance(values, str) else list(values)
    return query


def _settings(**kw: Any) -> dict[str, Any]:
    from .models import camel
    out: dict[str, Any] = {}
    for k, v in kw.items():
        if v is UNSET:
            continue
        if hasattr(v, "to_dict"):
            v = v.to_dict()
        out[camel(k)] = v
    return out


def _auth(auth: Any) -> Any:
    """A PushAuth as the API takes it: an unset audience left out (the endpoint's is the default)."""
    if auth is UNSET or auth is None or not hasattr(auth, "to_dict"):
        return auth
    return {k: v for k, v in auth.to_dict().items() if not (k == "audience" and not v)}


def _batch_errors(answer: Any, n: int) -> list[QueuesError | None]:
    out: list[QueuesError | None] = [None] * n
    for r in (answer or {}).get("results", []):
        i = r.get("index", -1)
        if r.get("error") and 0 <= i < n:
            out[i] = QueuesError.from_body(r["error"])
    return out


def _pages(read: Callable[[str | None], Page[Any]]) -> Iterator[Any]:
    """The items of a cursor-paged list; ``read`` reads the page at a cursor. Lazy: a page
    is read when the previous one's items are used up, so breaking off reads no more."""
    cursor = None
    while True:
        page = read(cursor)
        yield from page.items
        if not page.next_cursor:
            return
        cursor = page.next_cursor


class Client:
    """Calls the Queues HTTP API. Safe to share between threads (each keeps its own
    connection). ``token`` is a project token or, for the project and token routes, the
    operator credential; the ``/v1/receipts/*`` calls need none."""

    def __init__(self, base_url: str = DEFAULT_URL, token: str | None = None, *, timeout: float = 30.0,
                 retry: RetryPolicy | None = None, user_agent: str = USER_AGENT,
                 ssl_context: ssl.SSLContext | None = None) -> None:
        self._t = Transport(base_url, token, timeout, retry or RetryPolicy(), user_agent, ssl_context)

    @classmethod
    def from_env(cls, **kw: Any) -> "Client":
        """A client for ``$QUEUES_URL`` (default http://127.0.0.1:8080) with ``$QUEUES_TOKEN``."""
        return cls(os.environ.get(ENV_URL) or DEFAULT_URL, os.environ.get(ENV_TOKEN), **kw)

    @property
    def base_url(self) -> str:
        return self._t.base_url

    def with_token(self, token: str | None) -> "Client":
        """A client for the same service presenting another token."""
        t = self._t
        return Client(t.base_url, token, timeout=t.timeout, retry=t.retry, user_agent=t.user_agent,
                      ssl_context=t.ssl_context)

    def close(self) -> None:
        """Closes the calling thread's kept-alive connection (other threads' close as they end)."""
        self._t.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def call(self, method: str, path: str, query: dict[str, Any] | None = None, body: Any = None,
             *, timeout: float | None = None) -> Any:
        """Calls any route (path such as ``/v1/queues``) and returns its decoded JSON answer;
        for what the typed methods do not cover."""
        return self._t.request(method, path, query, body, timeout=timeout)[1]

    # Projects and tokens (operator credential), and the token's own project.

    def create_project(self, name: str) -> Project:
        return Project.from_dict(self.call("POST", "/v1/projects", body={"name": name}))

    def list_projects(self, *, limit: int | None = None, cursor: str | None = None) -> Page[Project]:
        a = self.call("GET", "/v1/projects", {"limit": limit, "cursor": cursor})
        return Page([Project.from_dict(p) for p in a["projects"]], a.get("nextCursor"))

    def all_projects(self, *, page_size: int | None = None) -> Iterator[Project]:
        """Every project (operator credential), page by page (``page_size`` per request)."""
        return _pages(lambda cursor: self.list_projects(limit=page_size, cursor=cursor))

    def push_jwks(self) -> dict[str, Any]:
        """The public keys (a JWK Set) that sign the push tokens of subscriptions with
        ``auth: {"type": "oidc"}`` (docs/push.md): what a receiver checks their JWT against.
        The service serves it without credentials."""
        return self.call("GET", "/.well-known/jwks.json")

    def get_project(self, project: str) -> Project:
        """The project with its ``limits`` and ``usage``."""
        return Project.from_dict(self.call("GET", "/v1/projects/" + _seg(project)))

    def update_project(self, project: str, limits: Limits | dict[str, Any]) -> Project:
        """Sets any subset of the project's limits; a limit set to None returns to the default.
        With a Limits, only its fields that are not None are sent (pass a dict for null)."""
        if isinstance(limits, Limits):
            limits = {k: v for k, v in limits.to_dict().items() if v is not None}
        return Project.from_dict(self.call("PATCH", "/v1/projects/" + _seg(project), body={"limits": limits}))

    def get_project_usage(self, project: str, *, from_: str | None = None, to: str | None = None) -> list[UsageHour]:
        a = self.call("GET", "/v1/projects/" + _seg(project) + "/usage", {"from": from_, "to": to})
        return [UsageHour.from_dict(u) for u in a["usage"]]

    def get_own_project(self) -> Project:
        """The token's own project, with its limits and usage (any scope)."""
        return Project.from_dict(self.call("GET", "/v1/project"))

    def get_own_usage(self, *, from_: str | None = None, to: str | None = None) -> list[UsageHour]:
        a = self.call("GET", "/v1/project/usage", {"from": from_, "to": to})
        return [UsageHour.from_dict(u) for u in a["usage"]]

    def create_token(self, project: str, name: str, scopes: Sequence[str], *,
                     ttl_seconds: int | None = None) -> TokenCreated:
        body: dict[str, Any] = {"name": name, "scopes": list(scopes)}
        if ttl_seconds is not None:
            body["ttlSeconds"] = ttl_seconds
        return TokenCreated.from_dict(self.call("POST", "/v1/projects/" + _seg(project) + "/tokens", body=body))

    def revoke_token(self, project: str, token: str) -> None:
        self.call("DELETE", "/v1/projects/" + _seg(project) + "/tokens/" + _seg(token))

    def get_sqs_credentials(self, project: str, token: str) -> dict[str, str]:
        """The token's key pair for the SQS door (operator credential):
        ``{"accessKeyId": <token slug>, "secretAccessKey": …}``."""
        return self.call("GET", "/v1/projects/" + _seg(project) + "/tokens/" + _seg(token) + "/sqs-credentials")

    # Queues.

    def create_queue(self, name: str, *, type: str = UNSET, visibility_timeout_seconds: int = UNSET,
                     retention_seconds: int = UNSET, delay_seconds: int = UNSET, receive_wait_seconds: int = UNSET,
                     redrive: Any = UNSET, content_based_dedup: bool = UNSET, fairness: str = UNSET,
                     delivery: str = UNSET, max_cancels: int = UNSET, max_message_bytes: int = UNSET,
                     group_policy: str = UNSET, group_affinity_seconds: int = UNSET,
                     max_groups_per_consumer: int = UNSET, on_dead_letter: str = UNSET) -> Queue:
        """Creates a queue; ``fairness`` is "fast" (default), "roundRobin" or "proportional";
        ``delivery="atMostOnce"`` (standard only, fixed) makes every receive remove what it
        hands out; ``max_cancels`` (default 10) bounds how often a message may be cancelled;
        ``max_message_bytes`` (1,024–1,048,576, default 262,144) is the largest message.
        Fifo queues: ``group_policy`` "sequenced" (default) or "exclusive" (a group binds to
        the consumer that receives it; every receive names a ``consumer_id``), with
        ``group_affinity_seconds`` (default 60) and ``max_groups_per_consumer`` (default 100);
        ``on_dead_letter`` ("continue", "park", "parkGroup"; the last two need a
        ``redrive``) is what a dead-letter does to the rest of its group."""
        body = {"name": name, **_settings(type=type, visibility_timeout_seconds=visibility_timeout_seconds,
                                          retention_seconds=retention_seconds, delay_seconds=delay_seconds,
                                          receive_wait_seconds=receive_wait_seconds, redrive=redrive,
                                          content_based_dedup=content_based_dedup, fairness=fairness,
                                          delivery=delivery, max_cancels=max_cancels,
                                          max_message_bytes=max_message_bytes, group_policy=group_policy,
                                          group_affinity_seconds=group_affinity_seconds,
                                          max_groups_per_consumer=max_groups_per_consumer,
                                          on_dead_letter=on_dead_letter)}
        return Queue.from_dict(self.call("POST", "/v1/queues", body=body))

    def list_queues(self, *, limit: int | None = None, cursor: str | None = None,
                    prefix: str | None = None) -> Page[Queue]:
        a = self.call("GET", "/v1/queues", {"limit": limit, "cursor": cursor, "prefix": prefix})
        return Page([Queue.from_dict(q) for q in a["queues"]], a.get("nextCursor"))

    def all_queues(self, *, prefix: str | None = None, page_size: int | None = None) -> Iterator[Queue]:
        """Every queue whose name starts with ``prefix``, page by page."""
        return _pages(lambda cursor: self.list_queues(limit=page_size, cursor=cursor, prefix=prefix))

    def get_queue(self, queue: str) -> Queue:
        """Settings, counts and partitions; ``queue`` is its id, slug or name."""
        return Queue.from_dict(self.call("GET", _q(queue)))

    def update_queue(self, queue: str, *, visibility_timeout_seconds: int = UNSET, retention_seconds: int = UNSET,
                     delay_seconds: int = UNSET, receive_wait_seconds: int = UNSET, redrive: Any = UNSET,
                     content_based_dedup: bool = UNSET, fairness: str = UNSET, max_cancels: int = UNSET,
                     max_message_bytes: int = UNSET, group_policy: str = UNSET, group_affinity_seconds: int = UNSET,
                     max_groups_per_consumer: int = UNSET, on_dead_letter: str = UNSET) -> Queue:
        """Changes the settings given (``redrive=None`` removes the policy)."""
        body = _settings(visibility_timeout_seconds=visibility_timeout_seconds, retention_seconds=retention_seconds,
                         delay_seconds=delay_seconds, receive_wait_seconds=receive_wait_seconds,
                         redrive=redrive, content_based_dedup=content_based_dedup, fairness=fairness,
                         max_cancels=max_cancels, max_message_bytes=max_message_bytes, group_policy=group_policy,
                         group_affinity_seconds=group_affinity_seconds,
                         max_groups_per_consumer=max_groups_per_consumer, on_dead_letter=on_dead_letter)
        return Queue.from_dict(self.call("PATCH", _q(queue), body=body))

    def delete_queue(self, queue: str) -> None:
        self.call("DELETE", _q(queue))

    def purge_queue(self, queue: str) -> PurgeResult:
        return PurgeResult.from_dict(self.call("POST", _q(queue) + "/purge") or {})

    # Messages.

    def send_batch(self, queue: str, messages: Iterable[SendMessage | str | dict[str, Any]]) -> SendResult:
        """Sends 1–10 messages. A problem with one message fails only that one, in the
        result's ``failed``; a problem with the request raises."""
        wire = []
        for m in messages:
            if isinstance(m, str):
                m = SendMessage(m)
            wire.append(m.to_dict() if isinstance(m, SendMessage) else m)
        a = self.call("POST", _q(queue) + "/messages", body={"messages": wire})
        return SendResult([SentMessage.from_dict(m) for m in a.get("messages", [])],
                          [FailedMessage(f["index"], QueuesError.from_body(f.get("error")))
                           for f in a.get("failed", [])])

    def send(self, queue: str, body: str, *, attributes: dict[str, str] | None = None,
             delay_seconds: int | None = None, group_id: str | None = None,
             dedup_id: str | None = None, deliver_at: Any = None, key: str | None = None,
             merge: str | None = None, traceparent: str | None = None,
             priority: int | None = None) -> SentMessage:
        """Sends one message; a problem with it raises its QueuesError. With ``key`` the answer's
        ``merged`` tells whether it changed the key's waiting message. ``traceparent`` (a W3C
        traceparent) is stored with it instead of the current span's context; ``priority`` 0-9
        (standard queues) puts it before lower ones."""
        r = self.send_batch(queue, [SendMessage(body, attributes, delay_seconds, group_id, dedup_id,
                                                deliver_at, key, merge, traceparent, priority=priority)])
        r.raise_for_failed()
        return r.messages[0]

    def receive(self, queue: str, *, max_messages: int | None = None, visibility_timeout_seconds: int | None = None,
                wait_seconds: int | None = None, consumer_id: str | None = None,
                max_backlog: int | None = None,
                filter: Mapping[str, str | Sequence[str]] | None = None) -> list[Message]:  # noqa: A002 (the API's name)
        """Claims up to ``max_messages`` (1–10), long-polling ``wait_seconds`` (None: the
        queue's receiveWaitSeconds); an empty list when the wait ends with none. ``consumer_id``
        names the consumer, whose unsettled messages ``max_backlog`` bounds (it needs
        ``consumer_id``). ``filter`` (attribute name to a value or a list of values, any of
        which matches; every name must match) takes only matching messages and leaves the
        others untouched (docs/delivery-options.md)."""
        body: dict[str, Any] = {}
        if filter:
            body["filter"] = filter_body(filter)
        if consumer_id is not None:
            body["consumerId"] = consumer_id
        if max_backlog is not None:
            body["maxBacklog"] = max_backlog
        if max_messages is not None:
            body["maxMessages"] = max_messages
        if visibility_timeout_seconds is not None:
            body["visibilityTimeoutSeconds"] = visibility_timeout_seconds
        if wait_seconds is not None:
            body["waitSeconds"] = wait_seconds
        timeout = self._t.timeout + (wait_seconds if wait_seconds is not None else 20)
        a = self._t.request("POST", _q(queue) + "/receive", body=body, timeout=timeout)[1]
        return [Message.from_dict(m) for m in a.get("messages", [])]

    def browse(self, queue: str, *, state: str | None = None, limit: int | None = None,
               cursor: str | None = None,
               filter: Mapping[str, str | Sequence[str]] | None = None) -> Page[BrowsedMessage]:  # noqa: A002
        """Messages in one state (visible, inFlight, delayed) without leasing them; with
        ``filter`` (as receive's) only matching ones, sent as ``attribute.<name>=<value>``. A
        filtered page examines at most 1,000 messages, so it may be short and still have a
        cursor."""
        query = _filter_query({"state": state, "limit": limit, "cursor": cursor}, filter)
        a = self.call("GET", _q(queue) + "/messages", query)
        return Page([BrowsedMessage.from_dict(m) for m in a["messages"]], a.get("nextCursor"))

    def browse_all(self, queue: str, *, state: str | None = None, page_size: int | None = None,
                   filter: Mapping[str, str | Sequence[str]] | None = None) -> Iterator[BrowsedMessage]:  # noqa: A002
        """Every message browse selects, page by page (a filtered page may be short or empty
        and still have a cursor: the iterator follows it)."""
        return _pages(lambda cursor: self.browse(queue, state=state, limit=page_size, cursor=cursor, filter=filter))

    def delete_message(self, queue: str, message_id: str) -> None:
        """Deletes one visible or delayed message by the id its send answered; raises
        QueuesError ``message_in_flight`` (409) while a consumer holds it, ``not_found`` (404)
        when the queue does not hold it."""
        self.call("DELETE", _q(queue) + "/messages/" + _seg(message_id))

    def list_consumers(self, queue: str, *, limit: int | None = None, cursor: str | None = None) -> Page[ConsumerInfo]:
        """The consumers seen in the last 5 minutes, by consumer id."""
        a = self.call("GET", _q(queue) + "/consumers", {"limit": limit, "cursor": cursor})
        return Page([ConsumerInfo.from_dict(x) for x in a["consumers"]], a.get("nextCursor"))

    def all_consumers(self, queue: str, *, page_size: int | None = None) -> Iterator[ConsumerInfo]:
        """Every consumer seen in the last 5 minutes, page by page."""
        return _pages(lambda cursor: self.list_consumers(queue, limit=page_size, cursor=cursor))

    def list_groups(self, queue: str, *, limit: int | None = None, cursor: str | None = None,
                    state: str | None = None) -> Page[Group]:
        """One page of a fifo queue's groups; ``state`` ("active" or "parked") lists only those."""
        a = self.call("GET", _q(queue) + "/groups", {"limit": limit, "cursor": cursor, "state": state})
        return Page([Group.from_dict(g) for g in a["groups"]], a.get("nextCursor"))

    def release_group(self, queue: str, group_id: str) -> None:
        """Releases a fifo group a poison policy parked: its messages are delivered again from its
        head. Raises ``group_not_parked`` (409) when it is not parked."""
        self.call("POST", _q(queue) + "/groups/" + _seg(group_id) + "/release")

    def all_groups(self, queue: str, *, page_size: int | None = None, state: str | None = None) -> Iterator[Group]:
        """Every message group of a fifo queue, page by page."""
        return _pages(lambda cursor: self.list_groups(queue, limit=page_size, cursor=cursor, state=state))

    def delete_group(self, queue: str, group_id: str) -> None:
        """Purges one message group of a fifo queue."""
        self.call("DELETE", _q(queue) + "/groups/" + _seg(group_id))

    # Push subscriptions.

    def create_subscription(self, queue: str, endpoint: str, *, batch_size: int = UNSET, batch_window_ms: int = UNSET,
                            max_in_flight: int = UNSET, timeout_seconds: int = UNSET,
                            paused: bool = UNSET, max_messages_per_second: int = UNSET,
                            flow_control: FlowControl = UNSET, disable_after_seconds: int = UNSET,
                            signing: str = UNSET, auth: PushAuth = UNSET) -> Subscription:
        """Creates the queue's push subscription; the answer holds ``signing_secret`` (once).
        ``signing="ed25519"`` signs v1a (the answer's ``signing_public_key`` verifies them);
        ``auth=PushAuth()`` adds a push token whose audience is the endpoint unless set."""
        body = {"endpoint": endpoint, **_settings(batch_size=batch_size, batch_window_ms=batch_window_ms,
                                                  max_in_flight=max_in_flight, timeout_seconds=timeout_seconds,
                                                  paused=paused, max_messages_per_second=max_messages_per_second,
                                                  flow_control=flow_control, disable_after_seconds=disable_after_seconds,
                                                  signing=signing, auth=_auth(auth))}
        return Subscription.from_dict(self.call("POST", _q(queue) + "/subscription", body=body))

    def get_subscription(self, queue: str) -> Subscription:
        return Subscription.from_dict(self.call("GET", _q(queue) + "/subscription"))

    def update_subscription(self, queue: str, *, endpoint: str = UNSET, batch_size: int = UNSET,
                            batch_window_ms: int = UNSET, max_in_flight: int = UNSET, timeout_seconds: int = UNSET,
                            paused: bool = UNSET, max_messages_per_second: int = UNSET,
                            flow_control: FlowControl | None = UNSET, disable_after_seconds: int = UNSET,
                            state: str = UNSET, signing: str = UNSET, auth: PushAuth | None = UNSET) -> Subscription:
        """Changes the settings given; ``flow_control`` replaces the whole setting, None turns it off.
        ``state="active"`` resumes a disabled subscription (``"disabled"`` stops it); ``auth=None``
        removes the push token."""
        body = _settings(endpoint=endpoint, batch_size=batch_size, batch_window_ms=batch_window_ms,
                         max_in_flight=max_in_flight, timeout_seconds=timeout_seconds, paused=paused,
                         max_messages_per_second=max_messages_per_second, flow_control=flow_control,
                         disable_after_seconds=disable_after_seconds, state=state, signing=signing, auth=_auth(auth))
        return Subscription.from_dict(self.call("PATCH", _q(queue) + "/subscription", body=body))

    def delete_subscription(self, queue: str) -> None:
        self.call("DELETE", _q(queue) + "/subscription")

    def rotate_subscription_secret(self, queue: str) -> Subscription:
        """A new signing secret; the previous one keeps signing beside it for 24 h."""
        return Subscription.from_dict(self.call("POST", _q(queue) + "/subscription/rotate-secret"))

    def list_subscription_attempts(self, queue: str, *, limit: int | None = None) -> list[PushAttempt]:
        """The newest ``limit`` push attempts (one page; attempts_page and
        all_subscription_attempts follow the cursor)."""
        return self.attempts_page(queue, limit=limit).items

    def attempts_page(self, queue: str, *, limit: int | None = None, cursor: str | None = None) -> Page[PushAttempt]:
        """One page of the subscription's push attempts, newest first."""
        a = self.call("GET", _q(queue) + "/subscription/attempts", {"limit": limit, "cursor": cursor})
        return Page([PushAttempt.from_dict(x) for x in a["attempts"]], a.get("nextCursor"))

    def all_subscription_attempts(self, queue: str, *, page_size: int | None = None) -> Iterator[PushAttempt]:
        """Every push attempt kept, newest first, page by page."""
        return _pages(lambda cursor: self.attempts_page(queue, limit=page_size, cursor=cursor))

    # Move tasks (redrive and replay, docs/redrive.md).

    def start_move_task(self, queue: str, *, destination: str | None = None,
                        filter: MoveFilter | dict[str, Any] | None = None,
                        max_messages_per_second: int | None = None, dry_run: bool = False,
                        action: str | None = None) -> MoveTask:
        """Starts a move task of queue (scope queues:admin): its matching visible messages move
        to ``destination`` (None: each back to its dead-letter source queue), or, with
        ``action="delete"``, are deleted (no destination; ``moved`` counts them). ``dry_run``
        only counts (``to_move``, ``failed``). A queue with a running task raises
        ``move_task_running`` (409)."""
        body: dict[str, Any] = {}
        if action is not None:
            body["action"] = action
        if destination is not None:
            body["destination"] = destination
        if filter is not None:
            body["filter"] = filter.to_dict() if isinstance(filter, MoveFilter) else filter
        if max_messages_per_second is not None:
            body["maxMessagesPerSecond"] = max_messages_per_second
        if dry_run:
            body["dryRun"] = True
        return MoveTask.from_dict(self.call("POST", _q(queue) + "/move-tasks", body=body))

    def list_move_tasks(self, queue: str, *, limit: int | None = None,
                        cursor: str | None = None) -> Page[MoveTask]:
        """One page of queue's move tasks, newest first (scope queues:read)."""
        a = self.call("GET", _q(queue) + "/move-tasks", {"limit": limit, "cursor": cursor})
        return Page([MoveTask.from_dict(t) for t in a["moveTasks"]], a.get("nextCursor"))

    def all_move_tasks(self, queue: str, *, page_size: int | None = None) -> Iterator[MoveTask]:
        """Every move task of queue, newest first, page by page."""
        return _pages(lambda cursor: self.list_move_tasks(queue, limit=page_size, cursor=cursor))

    def get_move_task(self, queue: str, task: str) -> MoveTask:
        """One move task with its progress (scope queues:read)."""
        return MoveTask.from_dict(self.call("GET", _q(queue) + "/move-tasks/" + _seg(task)))

    def cancel_move_task(self, queue: str, task: str) -> MoveTask:
        """Stops a running move task (scope queues:admin); what it moved stays moved. A
        finished task is answered as it is."""
        return MoveTask.from_dict(self.call("POST", _q(queue) + "/move-tasks/" + _seg(task) + "/cancel"))

    # Topics (docs/topics.md).

    def create_topic(self, name: str, *, type: str = UNSET, retention_seconds: int = UNSET) -> Topic:  # noqa: A002
        """Creates a topic (``type`` "standard", the default, or "fifo", fixed;
        ``retention_seconds`` 0–1,209,600, default 86,400); a taken name raises
        ``topic_exists`` (409)."""
        body = {"name": name, **_settings(type=type, retention_seconds=retention_seconds)}
        return Topic.from_dict(self.call("POST", "/v1/topics", body=body))

    def list_topics(self, *, limit: int | None = None, cursor: str | None = None,
                    prefix: str | None = None) -> Page[Topic]:
        a = self.call("GET", "/v1/topics", {"limit": limit, "cursor": cursor, "prefix": prefix})
        return Page([Topic.from_dict(t) for t in a["topics"]], a.get("nextCursor"))

    def all_topics(self, *, prefix: str | None = None, page_size: int | None = None) -> Iterator[Topic]:
        """Every topic whose name starts with ``prefix``, page by page."""
        return _pages(lambda cursor: self.list_topics(limit=page_size, cursor=cursor, prefix=prefix))

    def get_topic(self, topic: str) -> Topic:
        """A topic by id, slug or name, with its log's bounds."""
        return Topic.from_dict(self.call("GET", _t(topic)))

    def update_topic(self, topic: str, *, retention_seconds: int = UNSET) -> Topic:
        return Topic.from_dict(self.call("PATCH", _t(topic), body=_settings(retention_seconds=retention_seconds)))

    def delete_topic(self, topic: str) -> None:
        """Deletes a topic with its log, keyed state and bindings; the queues stay."""
        self.call("DELETE", _t(topic))

    def publish_batch(self, topic: str, messages: Iterable[PublishMessage | str | dict[str, Any]]) -> PublishResult:
        """Publishes 1–10 messages. A problem with one message fails only that one, in the
        result's ``failed``; a problem with the request raises."""
        wire = []
        for m in messages:
            if isinstance(m, str):
                m = PublishMessage(m)
            wire.append(m.to_dict() if isinstance(m, PublishMessage) else m)
        return PublishResult.from_answer(self.call("POST", _t(topic) + "/messages", body={"messages": wire}))

    def publish(self, topic: str, body: str | None, *, attributes: dict[str, str] | None = None,
                group_id: str | None = None, dedup_id: str | None = None, key: str | None = None,
                merge: str | None = None) -> PublishedMessage:
        """Publishes one message and answers its id and ``sequence``; a problem with it raises
        its QueuesError. ``body=None`` with ``key`` deletes the key's state."""
        r = self.publish_batch(topic, [PublishMessage(body, attributes, group_id, dedup_id, key, merge)])
        r.raise_for_failed()
        return r.messages[0]

    def read_log(self, topic: str, *, from_: Any = None, to: Any = None, limit: int | None = None,
                 cursor: str | None = None,
                 filter: Mapping[str, str | Sequence[str]] | None = None) -> Page[LogEntry]:  # noqa: A002
        """One page of the topic's log in sequence order, from ``from_`` (a sequence, an RFC
        3339 string or an aware datetime; default the oldest held) to ``to`` (inclusive;
        default the last); ``filter`` as browse's."""
        query = _filter_query({"from": _position(from_), "to": _position(to), "limit": limit, "cursor": cursor}, filter)
        a = self.call("GET", _t(topic) + "/messages", query)
        return Page([LogEntry.from_dict(m) for m in a["messages"]], a.get("nextCursor"))

    def log_entries(self, topic: str, *, from_: Any = None, to: Any = None,
                    filter: Mapping[str, str | Sequence[str]] | None = None,  # noqa: A002
                    page_size: int | None = None) -> Iterator[LogEntry]:
        """Every entry read_log selects, page by page."""
        return _pages(lambda cursor: self.read_log(topic, from_=from_, to=to, limit=page_size, cursor=cursor,
                                                   filter=filter))

    def start_replay(self, topic: str, queue: str, *, from_: Any, to: Any = None,
                     filter: Mapping[str, str | Sequence[str]] | None = None,  # noqa: A002
                     max_messages_per_second: int | None = None, dry_run: bool = False) -> Replay:
        """Replays the topic's log entries ``from_``..``to`` (inclusive: sequences, RFC 3339
        strings or aware datetimes; ``to`` None: the last sequence now) that ``filter`` selects
        into ``queue`` as new messages carrying ``replay_of`` (scope queues:admin). ``dry_run``
        only counts (``to_move``). A queue runs one task at a time (a replay into it or a move
        task from it): else ``move_task_running`` (409)."""
        body: dict[str, Any] = {"queue": queue, "from": _position(from_)}
        if to is not None:
            body["to"] = _position(to)
        if filter is not None:
            body["filter"] = filter_body(filter)
        if max_messages_per_second is not None:
            body["maxMessagesPerSecond"] = max_messages_per_second
        if dry_run:
            body["dryRun"] = True
        return Replay.from_dict(self.call("POST", _t(topic) + "/replays", body=body))

    def list_replays(self, topic: str, *, limit: int | None = None, cursor: str | None = None) -> Page[Replay]:
        """One page of the topic's replays, newest first (scope queues:read)."""
        a = self.call("GET", _t(topic) + "/replays", {"limit": limit, "cursor": cursor})
        return Page([Replay.from_dict(r) for r in a["replays"]], a.get("nextCursor"))

    def all_replays(self, topic: str, *, page_size: int | None = None) -> Iterator[Replay]:
        """Every replay of the topic, newest first, page by page."""
        return _pages(lambda cursor: self.list_replays(topic, limit=page_size, cursor=cursor))

    def get_replay(self, topic: str, replay: str) -> Replay:
        return Replay.from_dict(self.call("GET", _t(topic) + "/replays/" + _seg(replay)))

    def cancel_replay(self, topic: str, replay: str) -> Replay:
        """Stops a running replay after the batch in transit; a finished one is answered as
        it is."""
        return Replay.from_dict(self.call("POST", _t(topic) + "/replays/" + _seg(replay) + "/cancel"))

    def get_state(self, topic: str, key: str) -> StateEntry:
        """One key's state; a key without state raises ``not_found`` (404)."""
        return StateEntry.from_dict(self.call("GET", _t(topic) + "/state", {"key": key}))

    def list_state(self, topic: str, *, limit: int | None = None, cursor: str | None = None) -> Page[StateEntry]:
        """One page of the topic's keyed state, in key order."""
        a = self.call("GET", _t(topic) + "/state", {"limit": limit, "cursor": cursor})
        return Page([StateEntry.from_dict(s) for s in a["state"]], a.get("nextCursor"))

    def all_state(self, topic: str, *, page_size: int | None = None) -> Iterator[StateEntry]:
        """Every key's state in key order, page by page."""
        return _pages(lambda cursor: self.list_state(topic, limit=page_size, cursor=cursor))

    def topic_stream(self, topic: str, *, from_: Any = "now",
                     filter: Mapping[str, str | Sequence[str]] | None = None,  # noqa: A002
                     delta: bool = False, max_messages: int | None = None, window: int = DEFAULT_WINDOW,
                     read_timeout: float = 75.0) -> TopicStream:
        """Iterates over the topic's entries from ``from_`` on over the topic stream (scope
        messages:receive; docs/streaming.md), yielding ``TopicEvent``s in order: ``kind``
        "entry" (``.entry``, a StreamEntry; with ``delta`` keyed entries may be merge patches,
        ``entry.delta``) or "gap" (``.gap``: entries trimmed from the log before they could be
        delivered). ``from_``: "now" (default), "earliest", a sequence, an RFC 3339 string or
        an aware datetime; ``filter`` as read_log's.

        It keeps ``window`` (1–1,000) of credit granted, granting again as entries are taken,
        and the bookmark (the sequence after the last entry yielded): when the stream ends for
        a passing reason (a drop, a draining server, ``idle``, ``unavailable``, a 429, no frame
        for ``read_timeout`` seconds — the service pings every 25 s) it reconnects from it
        with backoff, so nothing is skipped or yielded twice. It raises what it cannot get
        past: ``not_found`` (the topic deleted), ``unauthenticated``, ``permission_denied``,
        ``invalid_argument``. ``close()`` (any thread) or a ``with`` block ends it. Started at
        "now" it first reads the topic's ``last_sequence`` (scope queues:read; without it a
        reconnect before the first entry starts at the new "now")."""

        def last() -> int | None:
            try:
                return self.get_topic(topic).last_sequence
            except QueuesError:
                return None

        return TopicStream(lambda q: self._open_stream(topic, q, read_timeout), last, from_=from_, filter=filter,
                           delta=delta, max_messages=max_messages, window=window)

    def open_topic_stream(self, topic: str, *, from_: Any = "now",
                          filter: Mapping[str, str | Sequence[str]] | None = None,  # noqa: A002
                          delta: bool = False, max_messages: int | None = None,
                          read_timeout: float | None = 75.0) -> TopicStreamConnection:
        """Opens one topic stream (scope messages:receive); it grants no credit: call
        ``credit``. A refused upgrade raises its QueuesError (404 for a missing topic)."""
        return self._open_stream(topic, stream_query(from_, filter, delta, max_messages), read_timeout)

    def _open_stream(self, topic: str, query: dict[str, Any], read_timeout: float | None) -> TopicStreamConnection:
        from . import _ws, tracing
        t = self._t
        url = t.base_url + _t(topic) + "/stream"
        if query:
            url += "?" + urllib.parse.urlencode(query, doseq=True)
        headers = {"User-Agent": t.user_agent}
        if t.token:
            headers["Authorization"] = "Bearer " + t.token
        tracing.inject(headers)
        return TopicStreamConnection(_ws.connect(url, headers, timeout=t.timeout, read_timeout=read_timeout,
                                                 ssl_context=t.ssl_context, proxy=t.proxy))

    def topic_bindings(self, topic: str) -> list[Binding]:
        """The topic's bindings."""
        return [Binding.from_dict(b) for b in self.call("GET", _t(topic) + "/bindings")["bindings"]]

    def bind(self, queue: str, topic: str, *, filter: Mapping[str, str | Sequence[str]] | None = None,  # noqa: A002
             from_: Any = None) -> Binding:
        """Binds queue to a topic: it receives one copy of every message published from
        ``from_`` on ("now", the default; "earliest"; a sequence; an RFC 3339 string or an
        aware datetime) that ``filter`` (as receive's) selects. Raises ``binding_exists`` (409)
        when bound already."""
        body: dict[str, Any] = {"topic": topic}
        if filter:
            body["filter"] = filter_body(filter)
        if from_ is not None:
            body["from"] = from_ if isinstance(from_, (str, int)) else from_.isoformat()
        return Binding.from_dict(self.call("POST", _q(queue) + "/sources", body=body))

    def list_sources(self, queue: str) -> list[Binding]:
        """The queue's bindings."""
        return [Binding.from_dict(b) for b in self.call("GET", _q(queue) + "/sources")["sources"]]

    def get_source(self, queue: str, binding: str) -> Binding:
        return Binding.from_dict(self.call("GET", _q(queue) + "/sources/" + _seg(binding)))

    def update_source_filter(self, queue: str, binding: str,
                             filter: Mapping[str, str | Sequence[str]] | None) -> Binding:  # noqa: A002
        """Replaces a binding's filter (None: every message enters the queue)."""
        body = {"filter": filter_body(filter) if filter else None}
        return Binding.from_dict(self.call("PATCH", _q(queue) + "/sources/" + _seg(binding), body=body))

    def unbind(self, queue: str, binding: str) -> None:
        """Deletes a binding: the queue receives nothing more from the topic, and keeps what
        it has."""
        self.call("DELETE", _q(queue) + "/sources/" + _seg(binding))

    # Receipts: the handle is the credential.

    def ack(self, receipt_handle: str) -> None:
        """Acknowledges (deletes) one delivery's message; a stale handle raises
        ``receipt_handle_stale`` (410)."""
        self.call("POST", "/v1/receipts/ack", body={"receiptHandle": receipt_handle})

    def ack_batch(self, receipt_handles: Sequence[str]) -> list[QueuesError | None]:
        """Acknowledges 1–100 deliveries: one error (or None) per handle, in order."""
        a = self.call("POST", "/v1/receipts/ack", body={"receiptHandles": list(receipt_handles)})
        return _batch_errors(a, len(receipt_handles))

    def cancel(self, receipt_handle: str) -> None:
        """Returns the delivery's message without counting the delivery: visible again at
        once, its receiveCount one lower; the cancel beyond the queue's maxCancels moves it to
        the dead-letter queue with reason "max_cancels"."""
        self.call("POST", "/v1/receipts/cancel", body={"receiptHandle": receipt_handle})

    def cancel_batch(self, receipt_handles: Sequence[str]) -> list[QueuesError | None]:
        """Cancels 1–100 deliveries: one error (or None) per handle, in order."""
        a = self.call("POST", "/v1/receipts/cancel", body={"receiptHandles": list(receipt_handles)})
        return _batch_errors(a, len(receipt_handles))

    def change_visibility(self, receipt_handle: str, visibility_timeout_seconds: int) -> None:
        """Sets the delivery's deadline to now + the timeout: extend, release (0) or retry
        after d."""
        self.call("POST", "/v1/receipts/visibility",
                  body={"receiptHandle": receipt_handle, "visibilityTimeoutSeconds": visibility_timeout_seconds})

    def release(self, receipt_handle: str) -> None:
        """Makes the delivery's message visible again at once."""
        self.change_visibility(receipt_handle, 0)

    def change_visibility_batch(self, entries: Sequence[tuple[str, int]]) -> list[QueuesError | None]:
        """Changes 1–100 deliveries' visibility: (receipt handle, timeout seconds) each."""
        body = {"entries": [{"receiptHandle": h, "visibilityTimeoutSeconds": s} for h, s in entries]}
        return _batch_errors(self.call("POST", "/v1/receipts/visibility", body=body), len(entries))

    def dead_letter(self, receipt_handle: str, reason: str | None = None) -> None:
        """Moves the delivery's message to the dead-letter queue now (dropped without a
        redrive policy), recording reason (default "consumer")."""
        body: dict[str, Any] = {"receiptHandle": receipt_handle}
        if reason:
            body["reason"] = reason
        self.call("POST", "/v1/receipts/dead-letter", body=body)

    def dead_letter_batch(self, entries: Sequence[tuple[str, str | None]]) -> list[QueuesError | None]:
        """Dead-letters 1–100 deliveries: (receipt handle, reason or None) each."""
        body = {"entries": [{"receiptHandle": h, **({"reason": r} if r else {})} for h, r in entries]}
        return _batch_errors(self.call("POST", "/v1/receipts/dead-letter", body=body), len(entries))

    # Health.

    def health(self) -> dict[str, Any]:
        return self.call("GET", "/healthz")

    def ready(self) -> dict[str, Any]:
        """Readiness; a failing dependency raises ``unavailable`` (503)."""
        return self.call("GET", "/readyz")

    # The consumer.

    def consume(self, queue: str, handler: Any, **options: Any) -> None:
        """Runs a Consumer (see queues.consumer) until its ``stop`` event is set."""
        from .consumer import Consumer
        Consumer(self, queue, handler, **options).run()
