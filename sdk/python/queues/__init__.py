"""Python client for Queues: the HTTP API (``Client``, ``AsyncClient``), consumers
(``Consumer`` on threads, ``AsyncConsumer`` on asyncio) and push receivers (``verify``,
``handle_push``, ``handle_push_async``). Standard library only."""

from ._http import RetryPolicy
from ._version import __version__
from .client import MAX_RECEIPT_BATCH, MAX_RECEIVE_BATCH, MAX_SEND_BATCH, ROUTES, SCOPE_ALL, UNSET, USER_AGENT, Client
from .consumer import Ack, Cancel, Consumer, ConsumerError, DeadLetter, Defer, Outcome, Retry, RetryAfter, outcome_of
from .errors import (AlreadyExistsError, AuthError, ConflictError, ForbiddenError, InternalError, InvalidReceiptError,
                     NotFoundError, PurgeTooSoonError, QueuesError, QuotaExceededError, RateLimitedError, StaleReceiptError,
                     TokenVerificationError, TransportError, UnavailableError, ValidationError, VisibilityLimitError,
                     WebhookVerificationError,
                     error_class)
from .models import (BrowsedMessage, ConsumerInfo, DeadLetterInfo, FlowControl, Group, Limits, Message, MoveFilter, MoveTask, Page, Project, ProjectUsage,
                     PurgeResult, PushAttempt, PushAuth, PushError, Queue, QueueCounts, Redrive, ReplayOf, SendMessage,
                     SendResult, SentMessage, Subscription, SubscriptionHealth, TokenCreated, UsageHour)
from .topics import (Binding, BindingFailure, LogEntry, PublishedMessage, PublishMessage, PublishResult, Replay,
                     StateEntry, Topic)
from .topicstream import StreamEntry, TopicEvent, TopicGap, TopicStream, TopicStreamConnection
from .webhooks import PushBatch, PushTokenClaims, TokenVerifier, handle_push, sign, verify
from .aio import AsyncClient, AsyncConsumer, handle_push_async

__all__ = [
    "USER_AGENT", "__version__", "AsyncClient", "AsyncConsumer", "handle_push_async",
    "AlreadyExistsError", "AuthError", "ConflictError", "ForbiddenError", "InternalError", "InvalidReceiptError",
    "NotFoundError", "PurgeTooSoonError", "QuotaExceededError", "RateLimitedError", "StaleReceiptError",
    "UnavailableError", "ValidationError", "VisibilityLimitError", "error_class",
    "Ack", "BrowsedMessage", "Cancel", "Client", "Consumer", "ConsumerError", "DeadLetter", "DeadLetterInfo", "Defer",
    "ConsumerInfo", "Group", "Limits", "MAX_RECEIPT_BATCH", "MAX_RECEIVE_BATCH", "MAX_SEND_BATCH", "Message", "MoveFilter", "MoveTask", "Outcome", "Page",
    "Project", "ProjectUsage", "PurgeResult", "PushAttempt", "PushBatch", "Queue", "QueueCounts", "QueuesError",
    "ROUTES", "Redrive", "Retry", "RetryAfter", "RetryPolicy", "SCOPE_ALL", "SendMessage", "SendResult",
    "SentMessage", "Subscription", "FlowControl", "TokenCreated", "TransportError", "UNSET", "UsageHour",
    "WebhookVerificationError", "handle_push", "outcome_of", "sign", "verify",
    "PushAuth", "PushError", "SubscriptionHealth", "PushTokenClaims", "TokenVerifier", "TokenVerificationError",
    "Binding", "BindingFailure", "LogEntry", "PublishMessage", "PublishResult", "PublishedMessage", "StateEntry", "Topic",
    "Replay", "ReplayOf", "StreamEntry", "TopicEvent", "TopicGap", "TopicStream", "TopicStreamConnection",
]
