package api

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/queueshq/queues/pkg/apierr"
	"github.com/queueshq/queues/pkg/auth"
)

// scopeOperator marks operator-only routes.
const scopeOperator = "operator"

const principalKey = "principal"

// require authenticates the bearer token and checks the route's scope before any resource is
// looked up: no or a bad token is 401, a good token without the scope is 403.
func (s *Server) require(scope string) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			p, err := s.authenticate(c)
			if err != nil {
				return err
			}
			allowed := p.Operator
			if scope != scopeOperator {
				allowed = p.Has(scope)
			}
			if !allowed {
				if scope == scopeOperator {
					return apierr.New(apierr.PermissionDenied, "this route needs the operator credential")
				}
				return apierr.New(apierr.PermissionDenied, "the token lacks the %q scope", scope)
			}
			c.Set(principalKey, p)
			if !p.Operator {
				if err := s.admit(c.Request().Context(), p.ProjectID); err != nil {
					return err
				}
			}
			return next(c)
		}
	}
}

func (s *Server) authenticate(c echo.Context) (auth.Principal, error) {
	h := c.Request().Header.Get(echo.HeaderAuthorization)
	scheme, bearer, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return auth.Principal{}, apierr.New(apierr.Unauthenticated, "send Authorization: Bearer <token>")
	}
	p, err := s.verifyBearer(strings.TrimSpace(bearer))
	if err != nil || p.Operator {
		return p, err
	}
	// A valid signature is not enough: the token may have been revoked.
	ctx, cancel := s.storageCtx(c)
	defer cancel()
	if err := s.tokenLive(ctx, p); err != nil {
		return auth.Principal{}, err
	}
	return p, nil
}

// tokenLive checks a verified project principal against its token record: unknown, revoked or
// expired is 401 unauthenticated. The record comes from the metadata cache, so revocation takes
// effect within its TTL on every replica; when the store cannot be reached and nothing is
// cached, the check fails closed (the store's error, 503). Every request calls it once; an
// open receive stream calls it again every second and before each batch (streamguard.go).
func (s *Server) tokenLive(ctx context.Context, p auth.Principal) error {
	t, err := s.cfg.Meta.GetToken(ctx, p.ProjectID, p.TokenID)
	switch {
	case apierr.CodeOf(err) == apierr.NotFound:
		return apierr.New(apierr.Unauthenticated, "unknown token")
	case err != nil:
		return err
	case t.RevokedAt != nil:
		return apierr.New(apierr.Unauthenticated, "the token was revoked")
	case t.ExpiresAt != nil && !s.cfg.Clock.Now().Before(*t.ExpiresAt):
		return apierr.New(apierr.Unauthenticated, "the token expired")
	}
	return nil
}

func principal(c echo.Context) auth.Principal {
	p, _ := c.Get(principalKey).(auth.Principal)
	return p
}

// tokenCache remembers the project principals Verify answered for a few seconds: checking a
// JWT's signature and parsing its claims is most of authentication's CPU, and a client sends
// the same token with every request. It is no shortcut around revocation or expiry: both are
// checked on every request against the token record (authenticate, above). Operator and
// refused credentials are never cached.
type tokenCache struct {
	mu sync.Mutex
	m  map[string]cachedPrincipal
}

type cachedPrincipal struct {
	p     auth.Principal
	until time.Time
}

const (
	tokenCacheTTL = 5 * time.Second // within the 5 s leeway Verify allows on expiry
	tokenCacheMax = 10_000
)

func (s *Server) verifyBearer(bearer string) (auth.Principal, error) {
	now := s.cfg.Clock.Now()
	c := &s.tokens
	c.mu.Lock()
	if e, ok := c.m[bearer]; ok && now.Before(e.until) {
		c.mu.Unlock()
		return e.p, nil
	}
	c.mu.Unlock()
	p, err := s.cfg.Auth.Verify(bearer)
	if err != nil || p.Operator {
		return p, err
	}
	c.mu.Lock()
	if c.m == nil || len(c.m) >= tokenCacheMax {
		c.m = map[string]cachedPrincipal{}
	}
	c.m[bearer] = cachedPrincipal{p: p, until: now.Add(tokenCacheTTL)}
	c.mu.Unlock()
	return p, nil
}
