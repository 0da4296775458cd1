"""Public-key signature verification on the standard library alone (Python ints and hashlib),
for the push verifiers of webhooks.py: Ed25519 (RFC 8032, section 5.1.7) for ``v1a``
signatures and RSASSA-PKCS1-v1_5 with SHA-256 (RFC 8017, section 8.2.2) for push tokens.

Only verification: every input is public (the key, the message, the signature), so nothing
here needs to run in constant time. Malformed input raises ValueError saying what is wrong;
a well-formed signature that does not match returns False."""

from __future__ import annotations

import hashlib
import hmac

# Ed25519's curve (RFC 8032, section 5.1): -x^2 + y^2 = 1 + d x^2 y^2 over GF(p).
_P = 2**255 - 19
_D = -121665 * pow(121666, -1, _P) % _P
# The order of the base point (the group the signatures live in).
_L = 2**252 + 27742317777372353535851937790883648493
# A square root of -1 mod p, for the second candidate of a point's x (section 5.1.3 step 3).
_SQRT_M1 = pow(2, (_P - 1) // 4, _P)

# Points in extended homogeneous coordinates (X, Y, Z, T): x = X/Z, y = Y/Z, x*y = T/Z.
_Point = tuple[int, int, int, int]


def _recover_x(y: int, sign: int) -> int:
    """The x of the point with this y and x's low bit sign (section 5.1.3, steps 2–4)."""
    if y >= _P:
        raise ValueError("ed25519: a point's y is not below p")
    u = (y * y - 1) % _P
    v = (_D * y * y + 1) % _P
    x = u * pow(v, 3, _P) * pow(u * pow(v, 7, _P), (_P - 5) // 8, _P) % _P
    if v * x * x % _P != u:
        if v * x * x % _P != -u % _P:
            raise ValueError("ed25519: not a point of the curve")
        x = x * _SQRT_M1 % _P
    if x == 0 and sign == 1:
        raise ValueError("ed25519: a point encodes x = 0 with the sign bit set")
    if x & 1 != sign:
        x = _P - x
    return x


def _decode_point(b: bytes) -> _Point:
    """A point from its 32-byte encoding (section 5.1.3): y little-endian, x's sign in bit 255."""
    if len(b) != 32:
        raise ValueError(f"ed25519: a point is 32 bytes, not {len(b)}")
    n = int.from_bytes(b, "little")
    y = n & ((1 << 255) - 1)
    x = _recover_x(y, n >> 255)
    return x, y, 1, x * y % _P


def _encode_point(pt: _Point) -> bytes:
    x, y, z, _ = pt
    zi = pow(z, -1, _P)
    x, y = x * zi % _P, y * zi % _P
    return (y | ((x & 1) << 255)).to_bytes(32, "little")


def _add(a: _Point, b: _Point) -> _Point:
    """Point addition (section 5.1.4), complete: it also doubles."""
    x1, y1, z1, t1 = a
    x2, y2, z2, t2 = b
    aa = (y1 - x1) * (y2 - x2) % _P
    bb = (y1 + x1) * (y2 + x2) % _P
    c = 2 * _D * t1 * t2 % _P
    d = 2 * z1 * z2 % _P
    e, f, g, h = bb - aa, d - c, d + c, bb + aa
    return e * f % _P, g * h % _P, f * g % _P, e * h % _P


def _mul(k: int, pt: _Point) -> _Point:
    """[k]pt by double-and-add (variable time: k and pt are public here)."""
    q: _Point = (0, 1, 1, 0)  # the neutral element
    while k:
        if k & 1:
            q = _add(q, pt)
        pt = _add(pt, pt)
        k >>= 1
    return q


_BY = 4 * pow(5, -1, _P) % _P
_BX = _recover_x(_BY, 0)
_B: _Point = (_BX, _BY, 1, _BX * _BY % _P)


def _equal(a: _Point, b: _Point) -> bool:
    x1, y1, z1, _ = a
    x2, y2, z2, _ = b
    return (x1 * z2 - x2 * z1) % _P == 0 and (y1 * z2 - y2 * z1) % _P == 0


def ed25519_check_public_key(public_key: bytes) -> None:
    """Raises ValueError unless public_key is 32 bytes encoding a point of the curve."""
    _decode_point(public_key)


def ed25519_verify(public_key: bytes, message: bytes, signature: bytes) -> bool:
    """Whether signature is public_key's Ed25519 signature of message (RFC 8032, 5.1.7).

    Raises ValueError for a public key that is not 32 bytes encoding a curve point. A
    signature that is not 64 bytes, whose R is not a point or whose S is not below L (a
    malleable encoding) is refused (False), as is any other mismatch. The check is the
    cofactorless [S]B = R + [k]A, which the RFC allows and Go's crypto/ed25519 makes."""
    a = _decode_point(public_key)
    if len(signature) != 64:
        return False
    try:
        r = _decode_point(signature[:32])
    except ValueError:
        return False
    s = int.from_bytes(signature[32:], "little")
    if s >= _L:
        return False
    k = int.from_bytes(hashlib.sha512(signature[:32] + public_key + message).digest(), "little") % _L
    return _equal(_mul(s, _B), _add(r, _mul(k, a)))


# DER of the DigestInfo for SHA-256 (RFC 8017, section 9.2, note 1), before the 32-byte hash.
_SHA256_DIGEST_INFO = bytes.fromhex("3031300d060960864801650304020105000420")

# The smallest RSA modulus accepted: a push token key below 2048 bits is refused, not trusted.
MIN_RSA_BITS = 2048


def rsa_pkcs1_sha256_verify(n: int, e: int, message: bytes, signature: bytes) -> bool:
    """Whether signature is the RSASSA-PKCS1-v1_5 SHA-256 signature of message under the
    public key (n, e) (RFC 8017, 8.2.2: length check, RSAVP1, EMSA-PKCS1-v1_5 encoding and
    comparison). Raises ValueError for a key that is not one: n below MIN_RSA_BITS bits or
    even, e not an odd number from 3 to n - 1."""
    if n.bit_length() < MIN_RSA_BITS or n % 2 == 0:
        raise ValueError(f"rsa: the modulus has {n.bit_length()} bits (at least {MIN_RSA_BITS}, odd)")
    if e < 3 or e % 2 == 0 or e >= n:
        raise ValueError("rsa: the public exponent is not an odd number from 3 to n - 1")
    k = (n.bit_length() + 7) // 8
    if len(signature) != k:  # step 1: the signature is exactly k octets
        return False
    s = int.from_bytes(signature, "big")  # step 2a: OS2IP
    if s >= n:  # RSAVP1 (5.2.2): the representative must be below n
        return False
    em = pow(s, e, n).to_bytes(k, "big")  # steps 2b, 2c: RSAVP1 and I2OSP
    t = _SHA256_DIGEST_INFO + hashlib.sha256(message).digest()  # step 3: EMSA-PKCS1-v1_5
    want = b"\x00\x01" + b"\xff" * (k - len(t) - 3) + b"\x00" + t
    return hmac.compare_digest(em, want)  # step 4
