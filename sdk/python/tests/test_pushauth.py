"""The asymmetric push signatures (v1a, ed25519) and push tokens (auth "oidc", RS256 JWT):
the standard-library Ed25519 and RSASSA-PKCS1-v1_5 verification of queues/_pubkey.py on
RFC 8032's test vectors and on signatures made here with a key of the test's own, then
verify, handle_push and TokenVerifier against what the real service pushes."""

from __future__ import annotations

import base64
import hashlib
import http.server
import json
import os
import queue as _queue
import random
import re
import threading
import time
import unittest
import urllib.request
from pathlib import Path
from typing import Any, Callable
from unittest import mock

from queues import (Message, PushAuth, Redrive, TokenVerificationError, TokenVerifier, WebhookVerificationError,
                    handle_push, sign, verify)
from queues._pubkey import _L, ed25519_verify, rsa_pkcs1_sha256_verify

from . import server
from .server import unique

# RFC 8032, section 7.1: TEST 1, 2, 3 and SHA(abc) (public key, message, signature; hex).
RFC8032 = [
    ("d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a", "",
     "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b"),
    ("3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c", "72",
     "92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da085ac1e43e15996e458f3613d0f11d8c387b2eaeb4302aeeb00d291612bb0c00"),
    ("fc51cd8e6218a1a38da47ed00230f0580816ed13ba3303ac5deb911548908025", "af82",
     "6291d657deec24024827e69c3abe01a30ce548a284743a445e3680d7db5ac3ac18ff9b538d16f290ae67f760984dc6594a7c15e9716ed28dc027beceea1ec40a"),
    ("ec172b93ad5e563bf4932c70e1245034c35467ef2efd4d64ebf819683467e2bf", hashlib.sha512(b"abc").hexdigest(),
     "dc2a4459e7369633a52b1bf277839a00201009a3efbf3ecb69bea2186c26b58909351fc9ac90b3ecfdfbc7c66431e0303dca179c138ac17ad9bef1177331a704"),
]


def flip(b: bytes, i: int) -> bytes:
    return b[:i] + bytes([b[i] ^ 1]) + b[i + 1:]


class Ed25519Test(unittest.TestCase):
    def test_rfc8032_vectors(self) -> None:
        for pub, msg, sig in RFC8032:
            p, m, s = bytes.fromhex(pub), bytes.fromhex(msg), bytes.fromhex(sig)
            with self.subTest(pub[:8]):
                self.assertTrue(ed25519_verify(p, m, s))
                self.assertFalse(ed25519_verify(p, m + b"x", s), "another message")
                self.assertFalse(ed25519_verify(p, m, flip(s, 0)), "R changed")
                self.assertFalse(ed25519_verify(p, m, flip(s, 40)), "S changed")
                other = bytes.fromhex(RFC8032[(RFC8032.index((pub, msg, sig)) + 1) % len(RFC8032)][0])
                self.assertFalse(ed25519_verify(other, m, s), "another key")

    def test_malformed_signatures_are_refused(self) -> None:
        p, m, s = (bytes.fromhex(x) for x in RFC8032[1])
        self.assertFalse(ed25519_verify(p, m, s[:63]))
        self.assertFalse(ed25519_verify(p, m, s + b"\0"))
        self.assertFalse(ed25519_verify(p, m, b""))
        # S + L is the same signature in another encoding: refused (S must be below L).
        s_plus_l = (int.from_bytes(s[32:], "little") + _L).to_bytes(32, "little")
        self.assertFalse(ed25519_verify(p, m, s[:32] + s_plus_l))
        self.assertFalse(ed25519_verify(p, m, NOT_A_POINT + s[32:]), "R not a point")

    def test_malformed_public_keys_raise(self) -> None:
        _, m, s = (bytes.fromhex(x) for x in RFC8032[0])
        too_big = (2**255 - 19 + 1).to_bytes(32, "little")  # y = p + 1: not reduced
        for name, key in {"31 bytes": bytes(31), "33 bytes": bytes(33), "not a point": NOT_A_POINT, "y >= p": too_big}.items():
            with self.subTest(name), self.assertRaises(ValueError):
                ed25519_verify(key, m, s)


def _not_a_point() -> bytes:
    """The encoding of the smallest y that is no point's (about half of them are not)."""
    for y in range(2, 100):
        b = y.to_bytes(32, "little")
        try:
            ed25519_verify(b, b"", bytes(64))
        except ValueError:
            return b
    raise AssertionError("no y below 100 fails to decode")


NOT_A_POINT = _not_a_point()


def _prime(rng: random.Random, bits: int) -> int:
    """A probable prime of bits bits (Miller-Rabin, 20 rounds), for a test key only."""
    while True:
        n = rng.getrandbits(bits) | (1 << (bits - 1)) | (1 << (bits - 2)) | 1
        if any(n % q == 0 for q in (3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37)):
            continue
        d, r = n - 1, 0
        while d % 2 == 0:
            d, r = d // 2, r + 1
        for _ in range(20):
            x = pow(rng.randrange(2, n - 1), d, n)
            if x in (1, n - 1):
                continue
            for _ in range(r - 1):
                x = pow(x, 2, n)
                if x == n - 1:
                    break
            else:
                break
        else:
            return n


class RSATest(unittest.TestCase):
    """RSASSA-PKCS1-v1_5 verification against an encoded message signed with raw RSA here, so
    each way an encoding can be wrong is tried (the library signs only the right way)."""

    @classmethod
    def setUpClass(cls) -> None:
        rng = random.Random(37)
        p, q = _prime(rng, 1024), _prime(rng, 1024)
        cls.n, cls.e = p * q, 65537
        cls.d = pow(cls.e, -1, (p - 1) * (q - 1))
        cls.k = (cls.n.bit_length() + 7) // 8

    def raw_sign(self, em: bytes) -> bytes:
        return pow(int.from_bytes(em, "big"), self.d, self.n).to_bytes(self.k, "big")

    def em(self, msg: bytes, info: str = "3031300d060960864801650304020105000420", pad: int = 0xFF, tail: bytes = b"",
           digest: str = "sha256") -> bytes:
        t = bytes.fromhex(info) + hashlib.new(digest, msg).digest() + tail
        return b"\x00\x01" + bytes([pad]) * (self.k - len(t) - 3) + b"\x00" + t

    def test_verifies_the_encoding_and_nothing_else(self) -> None:
        msg = b"header.claims"
        good = self.raw_sign(self.em(msg))
        self.assertTrue(rsa_pkcs1_sha256_verify(self.n, self.e, msg, good))
        self.assertFalse(rsa_pkcs1_sha256_verify(self.n, self.e, msg + b"x", good), "another message")
        self.assertFalse(rsa_pkcs1_sha256_verify(self.n, self.e, msg, flip(good, 100)), "a changed signature")
        self.assertFalse(rsa_pkcs1_sha256_verify(self.n, self.e, msg, good[1:]), "one octet short")
        self.assertFalse(rsa_pkcs1_sha256_verify(self.n, self.e, msg, b"\0" + good), "one octet long")
        self.assertFalse(rsa_pkcs1_sha256_verify(self.n, self.e, msg, self.n.to_bytes(self.k, "big")), "s = n")
        wrong = {
            "SHA-1 DigestInfo": self.raw_sign(self.em(msg, info="3021300906052b0e03021a05000414", digest="sha1")),
            "zero padding": self.raw_sign(self.em(msg, pad=0x00)),
            "garbage after the hash": self.raw_sign(self.em(msg, tail=b"\0\0\0\0")),
            "no NULL parameters": self.raw_sign(self.em(msg, info="302f300b0609608648016503040201" + "0420")),
        }
        for name, sig in wrong.items():
            with self.subTest(name):
                self.assertFalse(rsa_pkcs1_sha256_verify(self.n, self.e, msg, sig))

    def test_unusable_keys_raise(self) -> None:
        sig = self.raw_sign(self.em(b"m"))
        for name, (n, e) in {"1024 bits": (self.n >> 1024 | 1, self.e), "even n": (self.n + 1, self.e),
                             "e = 1": (self.n, 1), "even e": (self.n, 65536)}.items():
            with self.subTest(name), self.assertRaises(ValueError):
                rsa_pkcs1_sha256_verify(n, e, b"m", sig)


class Captured:
    """A receiver that records each push (headers, raw body) and acknowledges its messages."""

    def __init__(self, cleanup: Callable[..., None]) -> None:
        self.pushes: _queue.Queue[tuple[dict[str, str], bytes]] = _queue.Queue()
        pushes = self.pushes

        class Receiver(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                pushes.put(({k.lower(): v for k, v in self.headers.items()}, raw))
                out = json.dumps({"results": [{"messageId": m["messageId"], "outcome": "ack"}
                                              for m in json.loads(raw)["messages"]]}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

            def log_message(self, *a: object) -> None:
                pass

        httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
        threading.Thread(target=httpd.serve_forever, daemon=True).start()
        cleanup(httpd.server_close)
        cleanup(httpd.shutdown)
        self.url = f"http://127.0.0.1:{httpd.server_port}/push"


def first_push(cleanup: Callable[..., None], **settings: Any) -> tuple[dict[str, str], bytes, Any, str]:
    """Creates a queue with a subscription of the settings pushing to a Captured (stopped by
    cleanup), sends one message, and returns the first push's headers and body, the
    subscription, the queue name."""
    c = server.get().client()
    name = unique("pushauth")
    c.create_queue(name)
    rx = Captured(cleanup)
    sub = c.create_subscription(name, rx.url, **settings)
    c.send(name, '{"hello": "ü"}')
    headers, body = rx.pushes.get(timeout=20)
    return headers, body, sub, name


class V1aTest(unittest.TestCase):
    """A push the real service signed with the subscription's ed25519 key."""

    @classmethod
    def setUpClass(cls) -> None:
        cls.headers, cls.body, cls.sub, _ = first_push(cls.addClassCleanup, signing="ed25519")

    def test_the_subscription_shows_its_public_key(self) -> None:
        self.assertEqual(self.sub.signing, "ed25519")
        self.assertRegex(self.sub.signing_public_key or "", r"^whpk_[A-Za-z0-9+/]{43}=$")
        sigs = self.headers["webhook-signature"].split()
        self.assertTrue(sigs and all(s.startswith("v1a,") for s in sigs), sigs)

    def test_verifies_with_the_public_key(self) -> None:
        pk = self.sub.signing_public_key
        verify(pk, self.headers, self.body)
        verify([None, "whsec_" + base64.b64encode(b"an hmac secret beside it").decode(), pk], self.headers, self.body)
        verify(pk, list(self.headers.items()), bytearray(self.body))

    def test_refuses_forgeries(self) -> None:
        pk, h, body = self.sub.signing_public_key, self.headers, self.body
        other = "whpk_" + base64.b64encode(bytes.fromhex(RFC8032[0][0])).decode()
        hmac_secret = "whsec_" + base64.b64encode(b"0123456789abcdef0123456789abcdef").decode()
        cases: dict[str, tuple[str, dict[str, str], bytes]] = {
            "changed body": (pk, h, body + b" "),
            "changed id": (pk, {**h, "webhook-id": "att_other"}, body),
            "another key": (other, h, body),
            "v1a labeled v1": (pk, {**h, "webhook-signature": h["webhook-signature"].replace("v1a,", "v1,")}, body),
            "only an HMAC signature": (pk, {**h, "webhook-signature": sign(hmac_secret, h["webhook-id"], int(h["webhook-timestamp"]), body)}, body),
            "an HMAC secret for a v1a push": (hmac_secret, h, body),
            "a signature one byte short": (pk, {**h, "webhook-signature": "v1a," + base64.b64encode(base64.b64decode(h["webhook-signature"].split()[0][4:])[:63]).decode()}, body),
        }
        for name, (key, headers, b) in cases.items():
            with self.subTest(name), self.assertRaises(WebhookVerificationError):
                verify(key, headers, b)
        with self.assertRaises(WebhookVerificationError):
            verify(pk, h, body, now=int(h["webhook-timestamp"]) + 301)
        for bad in ("whpk_", "whpk_" + base64.b64encode(bytes(31)).decode(), "whpk_" + base64.b64encode(NOT_A_POINT).decode(), "whpk_***"):
            with self.subTest(bad), self.assertRaisesRegex(WebhookVerificationError, "public key"):
                verify(bad, h, body)


class V1aPushTest(unittest.TestCase):
    def test_handle_push_with_the_public_key(self) -> None:
        """handle_push verifies v1a when given the public key: the real pushes are acknowledged."""
        c = server.get().client()
        name = unique("v1a")
        dead = c.create_queue(name + "-dead")
        c.create_queue(name, redrive=Redrive(dead.id, 5))
        keys: list[str] = []
        got: _queue.Queue[str] = _queue.Queue()

        def handler(m: Message) -> None:
            got.put(m.body)

        class Receiver(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                status, headers, out = handle_push(keys, self.headers, raw, handler)
                self.send_response(status)
                for k, v in headers:
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(out)

            def log_message(self, *a: object) -> None:
                pass

        httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
        threading.Thread(target=httpd.serve_forever, daemon=True).start()
        self.addCleanup(httpd.server_close)
        self.addCleanup(httpd.shutdown)
        sub = c.create_subscription(name, f"http://127.0.0.1:{httpd.server_port}/push", signing="ed25519", paused=True)
        assert sub.signing_public_key
        keys.append(sub.signing_public_key)
        c.send_batch(name, ["a", "b"])
        c.update_subscription(name, paused=False)
        self.assertEqual(sorted([got.get(timeout=20), got.get(timeout=20)]), ["a", "b"])
        deadline = time.monotonic() + 10
        while (n := c.get_queue(name).counts).visible + n.in_flight:
            self.assertLess(time.monotonic(), deadline, f"not acknowledged: {n}")
            time.sleep(0.05)


def b64url(v: Any) -> str:
    return base64.urlsafe_b64encode(json.dumps(v).encode()).rstrip(b"=").decode()


def segment(jwt: str, i: int) -> dict[str, Any]:
    s = jwt.split(".")[i]
    out: dict[str, Any] = json.loads(base64.urlsafe_b64decode(s + "=" * (-len(s) % 4)))
    return out


AUDIENCE = "https://receiver.test/hook"


class TokenTest(unittest.TestCase):
    """A push token of the real service against its real JWKS."""

    @classmethod
    def setUpClass(cls) -> None:
        cls.headers, _, cls.sub, cls.queue = first_push(cls.addClassCleanup, auth=PushAuth(audience=AUDIENCE))
        cls.jwt = cls.headers["authorization"].removeprefix("Bearer ")
        cls.jwks_url = server.get().url + "/.well-known/jwks.json"

    def verifier(self, **kw: Any) -> TokenVerifier:
        return TokenVerifier(kw.pop("issuer", server.get().url), kw.pop("audience", AUDIENCE), jwks_url=self.jwks_url, **kw)

    def test_verifies_and_caches_the_keys(self) -> None:
        fetched: list[str] = []

        def fetch(url: str) -> bytes:
            fetched.append(url)
            with urllib.request.urlopen(url, timeout=10) as r:
                return bytes(r.read())

        v = self.verifier(fetch=fetch)
        claims = v.verify_request(self.headers)
        self.assertEqual((claims.iss, claims.aud), (server.get().url, AUDIENCE))
        self.assertTrue(claims.sub.endswith("/" + self.queue), claims.sub)
        self.assertEqual(claims.exp - claims.iat, 300)
        self.assertEqual(v.verify(self.jwt), claims)
        self.assertEqual(v.verify("Bearer " + self.jwt), claims)
        self.assertEqual(fetched, [self.jwks_url], "the key set is fetched once and cached by kid")
        self.assertEqual(self.sub.auth, PushAuth("oidc", AUDIENCE))
        self.assertEqual(server.get().client().push_jwks()["keys"][0]["alg"], "RS256")

    def test_unknown_kid_refetches_at_most_once_a_minute(self) -> None:
        clock = [time.time()]
        fetches = [0]

        def fetch(url: str) -> bytes:
            fetches[0] += 1
            with urllib.request.urlopen(url, timeout=10) as r:
                return bytes(r.read())

        v = self.verifier(fetch=fetch, now=lambda: clock[0])
        v.verify(self.jwt)
        h, p, s = self.jwt.split(".")
        other = b64url({**segment(self.jwt, 0), "kid": "rotated-in"}) + "." + p + "." + s
        for _ in range(2):
            with self.assertRaises(TokenVerificationError) as e:
                v.verify(other)
            self.assertEqual(e.exception.reason, "unknown_key")
        self.assertEqual(fetches[0], 1)
        clock[0] += 61
        with self.assertRaises(TokenVerificationError):
            v.verify(other)
        self.assertEqual(fetches[0], 2)

    def test_refuses_claims_that_do_not_match(self) -> None:
        exp = segment(self.jwt, 1)["exp"]
        cases = {
            "wrong audience": self.verifier(audience=AUDIENCE + "/other"),
            "wrong issuer": self.verifier(issuer="https://evil.test"),
            "expired": self.verifier(now=lambda: exp + 1),
            "expired beyond the leeway": self.verifier(now=lambda: exp + 11, leeway_seconds=10),
        }
        for name, v in cases.items():
            with self.subTest(name), self.assertRaises(TokenVerificationError) as e:
                v.verify(self.jwt)
            self.assertEqual(e.exception.reason, "bad_claims")
        self.verifier(now=lambda: exp).verify(self.jwt)  # valid until exp
        self.verifier(now=lambda: exp + 5, leeway_seconds=10).verify(self.jwt)

    def test_refuses_forged_and_malformed_tokens(self) -> None:
        h, p, s = self.jwt.split(".")
        head, claims = segment(self.jwt, 0), segment(self.jwt, 1)
        sig = base64.urlsafe_b64decode(s + "=" * (-len(s) % 4))
        cases = {
            "tampered claims": (h + "." + b64url({**claims, "sub": "someone/else"}) + "." + s, "bad_token"),
            "changed signature": (h + "." + p + "." + base64.urlsafe_b64encode(flip(sig, 10)).rstrip(b"=").decode(), "bad_token"),
            "unknown kid": (b64url({**head, "kid": "no-such-key"}) + "." + p + "." + s, "unknown_key"),
            "no kid": (b64url({"alg": "RS256"}) + "." + p + "." + s, "bad_token"),
            "alg none": (b64url({"alg": "none"}) + "." + p + ".", "bad_token"),
            "alg HS256": (b64url({**head, "alg": "HS256"}) + "." + p + "." + s, "bad_token"),
            "crit header": (b64url({**head, "crit": ["x"]}) + "." + p + "." + s, "bad_token"),
            "two parts": (h + "." + p, "bad_token"),
            "padded base64": (h + "." + p + "." + s + "=", "bad_token"),
            "not JSON": ("bm9wZQ." + p + "." + s, "bad_token"),
            "empty": ("", "no_token"),
            "just Bearer": ("Bearer ", "no_token"),
        }
        v = self.verifier()
        for name, (token, reason) in cases.items():
            with self.subTest(name), self.assertRaises(TokenVerificationError) as e:
                v.verify(token)
            self.assertEqual(e.exception.reason, reason, name)
        with self.assertRaises(TokenVerificationError) as e:
            v.verify_request({})
        self.assertEqual(e.exception.reason, "no_token")
        v.verify(self.jwt)  # the real one still verifies

    def test_unreachable_key_set(self) -> None:
        v = TokenVerifier(server.get().url, AUDIENCE, jwks_url=server.get().url + "/no-such-jwks.json")
        with self.assertRaises(TokenVerificationError) as e:
            v.verify(self.jwt)
        self.assertEqual(e.exception.reason, "jwks_unavailable")
        bad = TokenVerifier(server.get().url, AUDIENCE, fetch=lambda url: b"[1]")
        with self.assertRaises(TokenVerificationError) as e:
            bad.verify(self.jwt)
        self.assertEqual(e.exception.reason, "jwks_unavailable")


class SubscriptionFieldsTest(unittest.TestCase):
    """The settings and state of issue 37 through the client's types."""

    def test_settings_round_trip(self) -> None:
        c = server.get().client()
        name = unique("subfields")
        c.create_queue(name)
        sub = c.create_subscription(name, "http://127.0.0.1:9/push", paused=True, disable_after_seconds=3600,
                                    auth=PushAuth())
        self.assertEqual((sub.state, sub.disable_after_seconds, sub.signing), ("active", 3600, "hmac"))
        self.assertEqual(sub.auth, PushAuth("oidc", "http://127.0.0.1:9/push"), "the audience defaults to the endpoint")
        self.assertIsNone(sub.signing_public_key)
        got = c.update_subscription(name, signing="ed25519", auth=None, state="disabled", max_messages_per_second=50)
        self.assertEqual((got.signing, got.auth, got.state, got.max_messages_per_second), ("ed25519", None, "disabled", 50))
        self.assertTrue(got.signing_public_key and got.signing_public_key.startswith("whpk_"))
        got = c.get_subscription(name)
        self.assertEqual(got.state, "disabled")
        self.assertEqual(got.extra, {}, "every field the server sends has a typed home")
        if got.health is not None:
            self.assertGreaterEqual(got.health.flow_control_limit, 1)
        self.assertEqual(c.update_subscription(name, state="active").state, "active")


GUIDE = Path(__file__).resolve().parents[3] / "docs" / "receiving-pushes.md"


def guide_block(heading: str) -> str:
    """The first python code block under heading in docs/receiving-pushes.md."""
    text = GUIDE.read_text()
    m = re.compile(r"```python\n(.*?)```", re.S).search(text, text.index(heading))
    assert m is not None, f"no python block under {heading}"
    return m.group(1)


class GuideTest(unittest.TestCase):
    """docs/receiving-pushes.md's v1a and token receivers, run as written on a real push."""

    def test_v1a_and_token_snippets(self) -> None:
        srv = server.get()
        headers, body, sub, _ = first_push(self.addCleanup, signing="ed25519",
                                           auth=PushAuth(audience="https://example.com/queues"))
        handled: list[str] = []
        ns: dict[str, Any] = {"handler": lambda m: handled.append(m.body)}
        env = {"QUEUES_SIGNING_PUBLIC_KEY": sub.signing_public_key or "", "QUEUES_PUBLIC_URL": srv.url}
        with mock.patch.dict(os.environ, env):
            exec(guide_block("## Asymmetric signatures"), ns)  # noqa: S102
            self.assertEqual(ns["receive"](headers, body)[0], 200)
            self.assertEqual(ns["receive"](headers, body + b" ")[0], 401)
            exec(guide_block("## Token auth"), ns)  # noqa: S102 (PUBLIC_KEY and handler from above)
            self.assertEqual(ns["receive"](headers, body)[0], 200)
            no_token = {k: v for k, v in headers.items() if k != "authorization"}
            self.assertEqual(ns["receive"](no_token, body)[0], 401)
            self.assertEqual(ns["receive"]({**headers, "authorization": headers["authorization"] + "x"}, body)[0], 401)
        self.assertEqual(handled, ['{"hello": "ü"}'] * 2)
        with mock.patch.dict(os.environ, {"QUEUES_SIGNING_PUBLIC_KEY": "whsec_notakey"}), self.assertRaises(SystemExit):
            exec(guide_block("## Asymmetric signatures"), {})  # noqa: S102


if __name__ == "__main__":
    unittest.main()
