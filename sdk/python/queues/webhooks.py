"""Push receivers: Standard Webhooks verification and a framework-agnostic push handler.

``handle_push`` takes what any Python web framework gives (the headers, the raw body) and
returns ``(status, headers, body)`` for it to answer, so one function serves WSGI, ASGI,
``http.server``, Flask, Django, FastAPI or a serverless function alike."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re
import threading
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping, Sequence

from .consumer import Outcome, RetryAfter, outcome_of, seconds_up
from . import _pubkey, tracing
from .errors import TokenVerificationError, WebhookVerificationError
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


PUBLIC_KEY_PREFIX = "whpk_"


def _public_key(key: str) -> bytes:
    """The 32 bytes of a ``whpk_<base64>`` ed25519 public key (a subscription's
    ``signing_public_key``), checked to be a point of the curve."""
    try:
        raw = base64.b64decode(key[len(PUBLIC_KEY_PREFIX):], validate=True)
        _pubkey.ed25519_check_public_key(raw)
    except ValueError as e:
        raise WebhookVerificationError(f"a public key is not whpk_<base64 of an ed25519 key>: {e}") from e
    return raw


def verify(secrets: str | Sequence[str | None], headers: HeadersLike, raw_body: bytes, *,
           tolerance_seconds: float = DEFAULT_TOLERANCE_SECONDS, now: float | None = None) -> None:
    """Checks a push's Standard Webhooks signature, raising WebhookVerificationError unless:
    the three headers are present, ``webhook-timestamp`` is unix seconds within
    ``tolerance_seconds`` of now, and one of the space-separated ``v1,<base64>`` signatures
    is the HMAC-SHA256 of ``id.timestamp.body`` under one of ``secrets`` (the current and,
    for 24 h after a rotation, the previous; None and empty ones are skipped) — or, for a
    secret that is a subscription's ed25519 public key (``whpk_…``, signing "ed25519"), one
    of the ``v1a,<base64>`` signatures is its Ed25519 signature of ``id.timestamp.body``.
    HMAC signatures are compared in constant time. ``raw_body`` must be the bytes as received."""
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
    given: dict[str, list[bytes]] = {"v1": [], "v1a": []}
    for s in sigs.split():
        version, _, b64 = s.partition(",")
        if version not in given:
            continue
        try:
            given[version].append(base64.b64decode(b64, validate=True))
        except ValueError:
            continue
    if isinstance(raw_body, str):
        raw_body = raw_body.encode()
    body = bytes(raw_body)
    public = [_public_key(s) for s in secrets if s and s.startswith(PUBLIC_KEY_PREFIX)]
    keys = [_key(s) for s in secrets if s and not s.startswith(PUBLIC_KEY_PREFIX)]
    if not keys and not public:
        raise WebhookVerificationError("no signing secret to verify with")
    ok = False
    for key in keys:
        want = _mac(key, msg_id, ts, body)
        for sig in given["v1"]:
            # Every pair is compared (no early exit), each in constant time.
            ok |= hmac.compare_digest(sig, want)
    content = msg_id.encode() + b"." + ts.encode() + b"." + body
    # Public keys and signatures are public: no constant time needed, the first match will do.
    ok = ok or any(_pubkey.ed25519_verify(pk, content, sig) for pk in public for sig in given["v1a"])
    if not ok:
        raise WebhookVerificationError("no signature matches a signing secret")


@dataclass
class PushTokenClaims:
    """The claims of a verified push token: ``sub`` is the subscription as
    ``<project id>/<queue name>``; times are unix seconds."""

    iss: str
    sub: str
    aud: str
    iat: int
    exp: int


_B64URL = re.compile(r"^[A-Za-z0-9_-]*$")


def _b64url(s: str) -> bytes:
    """Unpadded base64url (RFC 7515), strictly: other characters or an impossible length raise ValueError."""
    if not _B64URL.match(s) or len(s) % 4 == 1:
        raise ValueError("not base64url")
    return base64.urlsafe_b64decode(s + "=" * (-len(s) % 4))


def _b64url_int(s: Any) -> int:
    if not isinstance(s, str) or not s:
        raise ValueError("not a base64url integer")
    return int.from_bytes(_b64url(s), "big")


def _fetch(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=10) as r:  # noqa: S310 (the deployment's own https URL)
        return bytes(r.read())


class TokenVerifier:
    """Checks the bearer JWT of a push from a subscription with ``auth: {"type": "oidc"}``:
    RS256 (RSASSA-PKCS1-v1_5 SHA-256) under a key of the service's JWKS
    (``<issuer>/.well-known/jwks.json``), ``iss`` equal to ``issuer``, ``aud`` equal to (or, as
    a list, holding) ``audience``, not expired (``leeway_seconds`` of clock skew allowed).
    Keys are fetched on first use and cached by ``kid``; a token naming an unknown kid (a
    rotation) fetches the set again, at most once every ``min_refresh_seconds``. Safe to share
    between threads. ``fetch`` (a URL to its body's bytes) and ``now`` (unix seconds) are for
    tests."""

    def __init__(self, issuer: str, audience: str, *, jwks_url: str | None = None, leeway_seconds: float = 0,
                 min_refresh_seconds: float = 60, fetch: Callable[[str], bytes] | None = None,
                 now: Callable[[], float] | None = None) -> None:
        self.issuer = issuer
        self.audience = audience
        self.jwks_url = jwks_url or issuer.rstrip("/") + "/.well-known/jwks.json"
        self.leeway_seconds = leeway_seconds
        self.min_refresh_seconds = min_refresh_seconds
        self._fetch = fetch or _fetch
        self._now = now or time.time
        self._keys: dict[str, tuple[int, int]] = {}
        self._fetched_at: float | None = None
        self._lock = threading.Lock()

    def verify_request(self, headers: HeadersLike) -> PushTokenClaims:
        """Checks the ``Authorization: Bearer`` header of a push request (headers in any of the
        shapes ``verify`` takes)."""
        return self.verify(_headers(headers).get("authorization"))

    def verify(self, token: str | None) -> PushTokenClaims:
        """Checks one token (bare, or an ``Authorization`` value ``Bearer <JWT>``) and returns
        its claims; raises TokenVerificationError when it does not verify."""
        token = (token or "").removeprefix("Bearer ").strip()
        if not token:
            raise TokenVerificationError("no_token", "no Authorization: Bearer token")
        try:
            head_b64, claims_b64, sig_b64 = token.split(".")
            header = json.loads(_b64url(head_b64))
            claims = json.loads(_b64url(claims_b64))
            sig = _b64url(sig_b64)
            if not isinstance(header, dict) or not isinstance(claims, dict):
                raise ValueError("a segment is not a JSON object")
        except ValueError as err:
            raise TokenVerificationError("bad_token", f"not a JWT ({err})") from err
        if header.get("alg") != "RS256":
            raise TokenVerificationError("bad_token", f"alg {header.get('alg')!r}, want RS256")
        if "crit" in header:
            raise TokenVerificationError("bad_token", "a crit header this verifier does not understand")
        n, e = self._key(header.get("kid"))
        try:
            ok = _pubkey.rsa_pkcs1_sha256_verify(n, e, (head_b64 + "." + claims_b64).encode(), sig)
        except ValueError as err:
            raise TokenVerificationError("unknown_key", f"the key set's key is not usable: {err}") from err
        if not ok:
            raise TokenVerificationError("bad_token", "the signature does not verify")
        return self._claims(claims)

    def _claims(self, c: dict[str, Any]) -> PushTokenClaims:
        aud = c.get("aud")
        now = self._now()
        exp, nbf = c.get("exp"), c.get("nbf")
        if c.get("iss") != self.issuer:
            raise TokenVerificationError("bad_claims", f"iss {c.get('iss')!r} is not {self.issuer!r}")
        if not (aud == self.audience or (isinstance(aud, list) and self.audience in aud)):
            raise TokenVerificationError("bad_claims", f"aud {aud!r} is not {self.audience!r}")
        if not isinstance(exp, (int, float)) or isinstance(exp, bool) or now > exp + self.leeway_seconds:
            raise TokenVerificationError("bad_claims", "the token has expired (or has no exp)")
        if isinstance(nbf, (int, float)) and now < nbf - self.leeway_seconds:
            raise TokenVerificationError("bad_claims", "the token is not valid yet (nbf)")
        return PushTokenClaims(str(c["iss"]), str(c.get("sub", "")), self.audience, int(c.get("iat", 0)), int(exp))

    def _key(self, kid: Any) -> tuple[int, int]:
        if not isinstance(kid, str) or not kid:
            raise TokenVerificationError("bad_token", "the token names no kid")
        with self._lock:
            key = self._keys.get(kid)
            due = self._fetched_at is None or self._now() - self._fetched_at >= self.min_refresh_seconds
            if key is None and due:
                self._refresh()
                key = self._keys.get(kid)
        if key is None:
            raise TokenVerificationError("unknown_key", f"kid {kid!r} is not in the service's key set")
        return key

    def _refresh(self) -> None:
        """Fetches the key set and adds its RS256 signing keys (the lock held)."""
        try:
            doc = json.loads(self._fetch(self.jwks_url))
            jwks = doc["keys"]
            if not isinstance(jwks, list):
                raise ValueError("keys is not a list")
        except (OSError, ValueError, KeyError, TypeError) as e:
            raise TokenVerificationError("jwks_unavailable", f"fetching {self.jwks_url}: {e}") from e
        self._fetched_at = self._now()
        for k in jwks:
            if not isinstance(k, dict) or k.get("kty") != "RSA" or not isinstance(k.get("kid"), str):
                continue
            if k.get("alg", "RS256") != "RS256" or k.get("use", "sig") != "sig":
                continue
            try:
                self._keys[k["kid"]] = (_b64url_int(k.get("n")), _b64url_int(k.get("e")))
            except ValueError:
                continue  # a malformed key verifies nothing; the others still do


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
