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


class TransportError(QueuesError):
    """The request did not get an answer (connection refused, reset, timed out)."""

    def __init__(self, message: str, cause: BaseException | None = None) -> None:
        super().__init__("transport", message)
        self.__cause__ = cause


class WebhookVerificationError(Exception):
    """A push whose Standard Webhooks signature does not verify."""
