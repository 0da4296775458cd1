package attacks

import (
	"strings"
	"testing"
)

// rows maps every attack of the security test plan (X1–X43) to the test that runs it, here or
// elsewhere, or says why it does not apply to this service. TestRowsComplete keeps it whole.
var rows = map[int]string{
	1:  "TestForgedTokens (alg none)",
	2:  "TestForgedTokens (nOnE, NONE)",
	3:  "TestForgedTokens (HS512, RS256, HS256 under a foreign key); pkg/auth TestRejectsForeignAndNone",
	4:  "TestForgedTokens (kid traversal, SQL, 3 KB, unknown): kid is a map lookup in the fixed key ring",
	5:  "TestForgedTokens (jku, x5u, jwk pointing at a test server, which must get no request)",
	6:  "TestTokenLifetimes (expired, nbf and iat in the future; leeway 5 s)",
	7:  "not applicable as written: tokens without exp are the spec's (ttlSeconds absent = no expiry). What bounds them is revocation, checked on every request against the token record: TestRevocation",
	8:  "TestTokenLifetimes (another issuer). We set no aud: one service, one issuer, and every token names its project (sub) and id (jti), both checked",
	9:  "TestForgedTokens (a receipt handle and a key id as bearer); handles and tokens use separate derived keys (pkg/signingkeys purposes)",
	10: "TestHugeCredentials (100 KiB header: 431; 5 KiB token: 401 before decoding), TestTokenLifetimes (500-deep claims); pkg/auth TestLongTokenRefusedBeforeDecoding",
	11: "TestCrossTenantMatrix (15 queue routes: identical 404 to a missing queue, B unchanged)",
	12: "TestCrossTenantMatrix (prefix listing)",
	13: "TestRevocation (polls until 401; the spec's bound is 5 s), TestRevokedStream (a stream opened before the revocation closes with an error frame and delivers nothing after it)",
	14: "TestKeyRotation (a replica on [new, old] accepts old and new tokens; one on [new] refuses old tokens; the old replica refuses new ones)",
	15: "TestTamperedHandles (every bit of the handle, truncations, extensions, base64 variants: 400, zero Redis commands), TestForgedFloodSparesValidHandles, TestTrustedProxyForwardedFor",
	16: "TestTamperedHandles (re-signed under a key with our key id, and pointed at another queue); the MAC covers queue, partition, message and attempt",
	17: "TestStaleHandles (after ack; after a redelivery: 410 on ack, visibility and dead-letter, no change), TestZombieAckAfterRedrive (after a dead-letter and a move back: attempts never repeat), TestStaleHandleStorm",
	18: "TestVisibilityBounds",
	19: "TestKeyRotation (an old handle acks on the rotated replica, is 400 where the key is gone); pkg/receipt TestRotation",
	20: "TestZZNoSecretsInLogs (debug-level logs of the whole suite)",
	21: "TestSubscriptionEndpointsRefused (literal addresses); webhook TestCheckAddr, TestDialControl; pusher TestSSRFGuard (connect time)",
	22: "TestSubscriptionEndpointsRefused (2130706433, 0x7f.1, 0177.0.0.1, 127.1 …); pusher TestNumericHostFormsCheckedAtConnect",
	23: "TestSubscriptionEndpointsRefused (localhost, .internal, .local, single labels); pusher TestClientRefusesNameResolvingPrivate (a public-looking name with a loopback A record, test DNS server)",
	24: "pusher TestRebindingCheckedOnEveryConnection (test DNS server: public, then 127.0.0.1, then public+10.0.0.5)",
	25: "pusher TestRedirectNotFollowed (301/302/303/307/308 to a private server: not followed, the 3xx is the answer, a failure)",
	26: "TestSubscriptionEndpointsRefused (http, ftp, file, gopher, userinfo). Ports are not restricted (8443 and others are common for webhooks): internal ports are unreachable because internal addresses are",
	27: "pusher TestProxyEnvironmentIgnored (HTTPS_PROXY and friends set: the transport has no Proxy, the request goes direct and is checked)",
	28: "pusher TestFailuresBackOffThenDeadLetter (a 70 KiB answer is invalid_response; the pusher reads at most 64 KiB)",
	29: "pusher TestTransportFailures (an endpoint that never answers: timeout, worker freed)",
	30: "pusher TestTransportFailures (untrusted certificate: ErrTLS); the client requires TLS 1.2",
	31: "pusher TestSignatureVerifiesWithReferenceLibrary, TestPushShapeAndSignature",
	32: "pusher TestSignatureVerifiesWithReferenceLibrary (the reference verifier's 5-minute tolerance)",
	33: "pusher TestSignatureVerifiesWithReferenceLibrary (both secrets' signatures during rotation)",
	34: "TestSubscriptionEndpointsRefused (whsec_ secret); webhook.NewSecret: 32 random bytes, a key separate from tokens and handles",
	35: "TestSlowloris (200 connections trickling a header: closed at the 5 s ReadHeaderTimeout, others served, no goroutine left)",
	36: "TestOversizedRequests, TestHugeCredentials (431); pkg/api TestHeaderCap",
	37: "TestOversizedRequests (over 3 MiB with Content-Length and chunked: 413), TestAnnouncedBodiesFlood (bounded heap/RSS); a chunked body without end is cut by the 30 s ReadTimeout (not waited for here)",
	38: "TestIdleKeepAlive (500 idle keep-alive connections: others served meanwhile, each closed by the server at the idle timeout, shortened to 3 s; no goroutine left)",
	39: "tests/e2e TestRateLimits (per-queue 429 with Retry-After); the per-project limit and its isolation are the tenancy work's (tests there)",
	40: "TestHostileNames (Unicode, control characters, 10 KB, braces; group-id braces never lead a Redis key)",
	41: "TestHostileJSON; fuzzing: pkg/api FuzzSendRequest, FuzzReceiptRequest, FuzzSubscriptionRequest, FuzzParseString",
	42: "TestZZConstantTimeComparisons (static check of the MAC and credential comparisons)",
	43: "TestCrossTenantMatrix (no existence hint), TestStorageRefusals (fixed messages, no Redis text or address; MISCONF/OOM 503)",
}

func TestRowsComplete(t *testing.T) {
	for i := 1; i <= 43; i++ {
		if strings.TrimSpace(rows[i]) == "" {
			t.Errorf("X%d has no test and no reason", i)
		}
	}
	if len(rows) != 43 {
		t.Errorf("%d rows; the plan has 43", len(rows))
	}
}
