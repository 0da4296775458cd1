"""Errors of the Queues API, as the SDK raises them."""

from __future__ import annotations

from typing import Any

# The API's error codes (openapi.yaml's ErrorCode), and the HTTP status each maps to, for
# errors that arrive inside a 200 answer (a failed message of a send, an entry of a batch).
CODE_STATUS: dict[str, int] = {
    "invalid_argument": 400,
    "payload_too_large": 413,
    "unsupported_media_type": 415,
    "unauthenticated": 401,
    "permission_denied": 403,
    "quota_exceeded": 403,
    "not_found": 404,
    "method_not_allowed": 405,
    "queue_exists": 409,
    "queue_in_use": 409,
    "subscription_exists": 409,
    "topic_exists": 409,
    "binding_exists": 409,
    "message_in_flight": 409,
    "move_task_running": 409,
    "group_not_parked": 409,
    "receipt_handle_invalid": 400,
    "receipt_handle_stale": 410,
    "visibility_limit_exceeded": 400,
    "purge_too_soon": 429,
    "rate_limited": 429,
    "unavailable": 503,
    "internal": 500,
}


class QueuesError(Exception):
    """An error answer of the API: ``{"error": {"code", "message", "details"}}``.

    ``status`` is the HTTP status (for a per-message or per-entry error inside a 200 answer,
    the status its code maps to); ``field`` is ``details.field``, the request field at fault
    (``messages[2].delaySeconds``); ``retry_after`` the answer's Retry-After in seconds;
    ``request_id`` its X-Request-Id.
    """

    def __new__(cls, code: str = "internal", *args: Any, **kw: Any) -> "QueuesError":
        # QueuesError(code, …) builds the subclass its code names (NotFoundError for
        # not_found, …), so every place that raises from an answer raises the typed error
        # and ``except QueuesError`` still catches them all.
        if cls is QueuesError:
            cls = error_class(code, kw.get("status", 0))
        return super().__new__(cls)

    def __init__(
        self,
        code: str,
        message: str = "",
        *,
        status: int = 0,
        field: str | None = None,
        details: dict[str, Any] | None = None,
        retry_after: float | None = None,
        request_id: str | None = None,
    ) -> None:
        self.code = code
        self.message = message
        self.status = status or CODE_STATUS.get(code, 0)
        self.details = details or {}
        self.field = field if field is not None else self.details.get("field")
        self.retry_after = retry_after
        self.request_id = request_id
        super().__init__(str(self))

    def __str__(self) -> str:
        s = f"queues: {self.code}"
        if self.status:
            s += f" ({self.status})"
        if self.message:
            s += f": {self.message}"
        if self.field:
            s += f" [{self.field}]"
        return s

    @classmethod
    def from_body(cls, body: Any, status: int = 0, **kw: Any) -> "QueuesError":
        """Builds the error from an ``{"code", "message", "details"}`` object."""
        if not isinstance(body, dict):
            return cls("internal", f"unexpected error body {body!r}", status=status, **kw)
        details = body.get("details") if isinstance(body.get("details"), dict) else {}
        return cls(str(body.get("code") or "internal"), str(body.get("message") or ""),
                   status=status, details=details, **kw)

    @property
    def is_not_found(self) -> bool:
        return self.code == "not_found"

    @property
    def is_stale(self) -> bool:
        return self.code == "receipt_handle_stale"

    @property
    def is_auth(self) -> bool:
        return self.code in ("unauthenticated", "permission_denied")

    @property
    def is_quota_exceeded(self) -> bool:
        return self.code == "quota_exceeded"

    @property
    def is_rate_limited(self) -> bool:
        return self.code == "rate_limited"

    @property
    def is_conflict(self) -> bool:
        return isinstance(self, ConflictError)


class ValidationError(QueuesError):
    """The request is not acceptable as sent (400 ``invalid_argument``, 405, 413, 415);
    ``field`` names the request field at fault when there is one."""


class InvalidReceiptError(ValidationError):
    """400 ``receipt_handle_invalid``: the receipt handle is not one the service issued."""


class VisibilityLimitError(ValidationError):
    """400 ``visibility_limit_exceeded``: the delivery would stay in flight past the
    service's limit on one delivery's visibility."""


class AuthError(QueuesError):
    """401 ``unauthenticated``: no token, a bad one, an expired or revoked one. Its subclass
    ForbiddenError is the 403 of a good token without the scope."""


class ForbiddenError(AuthError):
    """403 ``permission_denied``: the token lacks the scope (or is a project token on an
    operator route)."""


class QuotaExceededError(QueuesError):
    """403 ``quota_exceeded``: a project limit (queues, subscriptions, stored bytes) is
    reached; ``details`` names it."""


class NotFoundError(QueuesError):
    """404 ``not_found``: the queue, topic, message, task… does not exist."""


class ConflictError(QueuesError):
    """409: the resource exists already, is in use, the message is in flight, a move task
    runs, the group is not parked (``group_not_parked``)."""


class AlreadyExistsError(ConflictError):
    """409 ``queue_exists``, ``topic_exists``, ``subscription_exists``, ``binding_exists``."""


class StaleReceiptError(QueuesError):
    """410 ``receipt_handle_stale``: the delivery is over (settled, or its visibility
    timeout passed and the message was handed out again)."""


class RateLimitedError(QueuesError):
    """429 ``rate_limited`` (retried by the client's RetryPolicy before it is raised);
    ``retry_after`` is the answer's Retry-After in seconds."""


class PurgeTooSoonError(RateLimitedError):
    """429 ``purge_too_soon``: a purge within 60 s of the previous one (not retried)."""


class UnavailableError(QueuesError):
    """503 ``unavailable``: a dependency of the service is down; retried like 429."""


class InternalError(QueuesError):
    """500 ``internal``, or an answer the SDK cannot read."""


# The class each error code is raised as; a code this SDK does not know yet is typed by its
# HTTP status (_BY_STATUS), so a new 404 code is still a NotFoundError.
_BY_CODE: dict[str, type[QueuesError]] = {
    "invalid_argument": ValidationError,
    "payload_too_large": ValidationError,
    "unsupported_media_type": ValidationError,
    "method_not_allowed": ValidationError,
    "receipt_handle_invalid": InvalidReceiptError,
    "visibility_limit_exceeded": VisibilityLimitError,
    "unauthenticated": AuthError,
    "permission_denied": ForbiddenError,
    "quota_exceeded": QuotaExceededError,
    "not_found": NotFoundError,
    "queue_exists": AlreadyExistsError,
    "topic_exists": AlreadyExistsError,
    "subscription_exists": AlreadyExistsError,
    "binding_exists": AlreadyExistsError,
    "queue_in_use": ConflictError,
    "message_in_flight": ConflictError,
    "move_task_running": ConflictError,
    "group_not_parked": ConflictError,
    "receipt_handle_stale": StaleReceiptError,
    "rate_limited": RateLimitedError,
    "purge_too_soon": PurgeTooSoonError,
    "unavailable": UnavailableError,
    "internal": InternalError,
}
_BY_STATUS: dict[int, type[QueuesError]] = {
    400: ValidationError, 401: AuthError, 403: ForbiddenError, 404: NotFoundError, 405: ValidationError,
    409: ConflictError, 410: StaleReceiptError, 413: ValidationError, 415: ValidationError,
    429: RateLimitedError, 500: InternalError, 503: UnavailableError,
}


def error_class(code: str, status: int = 0) -> type[QueuesError]:
    """The QueuesError subclass raised for an error code (by HTTP status for codes this SDK
    does not know; QueuesError itself when neither says)."""
    return _BY_CODE.get(code) or _BY_STATUS.get(status or CODE_STATUS.get(code, 0)) or QueuesError


class TransportError(QueuesError):
    """The request did not get an answer (connection refused, reset, timed out)."""

    def __init__(self, message: str, cause: BaseException | None = None) -> None:
        super().__init__("transport", message)
        self.__cause__ = cause


class WebhookVerificationError(Exception):
    """A push whose Standard Webhooks signature does not verify."""


class TokenVerificationError(Exception):
    """A push token (``Authorization: Bearer <JWT>``, auth type "oidc") that does not verify.
    ``reason`` says why: no_token, bad_token (not an RS256 JWT, or the signature does not
    verify), unknown_key (its kid is not in the service's key set), bad_claims (iss, aud, exp
    or nbf), jwks_unavailable (the key set could not be fetched)."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(f"queues push token: {message}")
        self.reason = reason
