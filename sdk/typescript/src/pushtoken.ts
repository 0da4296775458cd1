// Verification of the bearer JWT of a push from a subscription with auth type "oidc": RS256
// under a key of the service's JWKS (<issuer>/.well-known/jwks.json), iss, aud and exp
// checked. WebCrypto and fetch only, so it runs wherever the core does (Node, edge, Deno, Bun).

/** Why a token was refused. */
export type TokenFailure = 'no_token' | 'bad_token' | 'unknown_key' | 'bad_claims' | 'jwks_unavailable';

/** A push token that does not verify. */
export class TokenVerificationError extends Error {
  constructor(
    readonly reason: TokenFailure,
    message: string,
  ) {
    super(`queues push token: ${message}`);
    this.name = 'TokenVerificationError';
  }
}

/** The claims of a push token. */
export interface PushTokenClaims {
  iss: string;
  /** The subscription: `<project id>/<queue name>`. */
  sub: string;
  aud: string;
  iat: number;
  exp: number;
}

export interface TokenVerifierOptions {
  /** The service's public URL (its QUEUES_PUBLIC_URL), the tokens' iss. */
  issuer: string;
  /** The subscription's audience (by default its endpoint URL). */
  audience: string;
  /** Where the keys are (default `<issuer>/.well-known/jwks.json`). */
  jwksUrl?: string;
  /** Seconds of clock skew allowed on exp (default 0). */
  leewaySeconds?: number;
  /** Least seconds between two fetches of the key set for an unknown kid (default 60). */
  minRefreshSeconds?: number;
  fetch?: typeof fetch;
  /** The clock, in milliseconds (default Date.now). */
  now?: () => number;
}

interface Jwk {
  kty: string;
  kid: string;
  n: string;
  e: string;
  alg?: string;
}

function b64urlBytes(s: string): Uint8Array {
  const b64 = s.replace(/-/g, '+').replace(/_/g, '/') + '='.repeat((4 - (s.length % 4)) % 4);
  const bin = atob(b64);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

function segment<T>(s: string): T {
  return JSON.parse(new TextDecoder().decode(b64urlBytes(s))) as T;
}

/**
 * Returns a verifier of push tokens: await it with the request's Authorization header (or the
 * bare token); it resolves to the claims or rejects with TokenVerificationError. Keys are
 * cached by kid; an unknown kid (a rotation) fetches the set again, at most once a minute.
 */
export function createTokenVerifier(o: TokenVerifierOptions): (authorization: string | null | undefined) => Promise<PushTokenClaims> {
  const jwksUrl = o.jwksUrl ?? `${o.issuer.replace(/\/$/, '')}/.well-known/jwks.json`;
  const keys = new Map<string, CryptoKey>();
  let fetchedAt = 0;
  const now = () => (o.now ?? Date.now)();
  const alg = { name: 'RSASSA-PKCS1-v1_5', hash: 'SHA-256' };

  async function refresh(): Promise<void> {
    let set: { keys?: Jwk[] };
    try {
      const res = await (o.fetch ?? fetch)(jwksUrl);
      if (!res.ok) throw new Error(`status ${res.status}`);
      set = (await res.json()) as { keys?: Jwk[] };
    } catch (e) {
      throw new TokenVerificationError('jwks_unavailable', `fetching ${jwksUrl}: ${(e as Error).message}`);
    }
    fetchedAt = now();
    for (const k of set.keys ?? []) {
      if (k.kty !== 'RSA' || !k.kid || keys.has(k.kid)) continue;
      keys.set(k.kid, await crypto.subtle.importKey('jwk', { kty: 'RSA', n: k.n, e: k.e, alg: 'RS256', ext: true }, alg, false, ['verify']));
    }
  }

  async function key(kid: string): Promise<CryptoKey> {
    let k = keys.get(kid);
    if (!k && (fetchedAt === 0 || now() - fetchedAt >= (o.minRefreshSeconds ?? 60) * 1000)) {
      await refresh();
      k = keys.get(kid);
    }
    if (!k) throw new TokenVerificationError('unknown_key', `kid ${JSON.stringify(kid)} is not in the service's key set`);
    return k;
  }

  return async (authorization) => {
    const token = (authorization ?? '').replace(/^Bearer /, '');
    if (!token) throw new TokenVerificationError('no_token', 'no Authorization: Bearer token');
    const parts = token.split('.');
    let header: { alg?: string; kid?: string };
    let claims: PushTokenClaims;
    let sig: Uint8Array;
    try {
      if (parts.length !== 3) throw new Error('not three parts');
      header = segment(parts[0]!);
      claims = segment(parts[1]!);
      sig = b64urlBytes(parts[2]!);
    } catch {
      throw new TokenVerificationError('bad_token', 'not a JWT');
    }
    if (header.alg !== 'RS256') throw new TokenVerificationError('bad_token', `alg ${header.alg}, want RS256`);
    const k = await key(header.kid ?? '');
    const data = new TextEncoder().encode(`${parts[0]}.${parts[1]}`);
    if (!(await crypto.subtle.verify(alg, k, sig as Uint8Array<ArrayBuffer>, data))) {
      throw new TokenVerificationError('bad_token', 'the signature does not verify');
    }
    const t = now() / 1000;
    if (claims.iss !== o.issuer || claims.aud !== o.audience || typeof claims.exp !== 'number' || t > claims.exp + (o.leewaySeconds ?? 0)) {
      throw new TokenVerificationError('bad_claims', 'iss, aud or exp does not match');
    }
    return claims;
  };
}
