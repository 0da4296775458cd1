package api

import (
	"net/http"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/labstack/echo/v4"

	"github.com/queueshq/queues/pkg/apierr"
	"github.com/queueshq/queues/pkg/auth"
	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/meta"
)

type projectJSON struct {
	ID        string `json:"id"`
	Slug      string `json:"slug"`
	Name      string `json:"name"`
	CreatedAt string `json:"createdAt"`
}

func projectOut(p meta.Project) projectJSON {
	return projectJSON{ID: p.ID.String(), Slug: p.ID.Slug(ids.ProjectPrefix), Name: p.Name, CreatedAt: formatTime(p.CreatedAt)}
}

// maxTokenTTL keeps expiresAt representable and sane (100 years).
const maxTokenTTL = 100 * 365 * 24 * 3600

func displayName(o *object, field string) (string, *apierr.Error) {
	name, ok, err := o.str(field)
	if err != nil {
		return "", err
	}
	if !ok || strings.TrimSpace(name) == "" || utf8.RuneCountInString(name) > 100 {
		return "", apierr.Invalid(o.path(field), "must be a non-blank string of 1 to 100 characters")
	}
	return name, nil
}

func (s *Server) createProject(c echo.Context) error {
	data, err := readBody(c)
	if err != nil {
		return err
	}
	o, aerr := parseObject(data, "", false, "name")
	if aerr != nil {
		return aerr
	}
	name, aerr := displayName(o, "name")
	if aerr != nil {
		return aerr
	}
	p := meta.Project{ID: ids.New(), Name: name, CreatedAt: s.cfg.Clock.Now().UTC().Truncate(time.Millisecond)}
	ctx, cancel := s.storageCtx(c)
	defer cancel()
	if err := s.cfg.Meta.CreateProject(ctx, p); err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, projectOut(p))
}

func (s *Server) listProjects(c echo.Context) error {
	page, err := pageParams(c, 100, 1000)
	if err != nil {
		return err
	}
	ctx, cancel := s.storageCtx(c)
	defer cancel()
	ps, next, err := s.cfg.Meta.ListProjects(ctx, page)
	if err != nil {
		return err
	}
	out := make([]projectJSON, len(ps))
	for i, p := range ps {
		out[i] = projectOut(p)
	}
	return c.JSON(http.StatusOK, map[string]any{"projects": out, "nextCursor": cursorOut(next)})
}

func (s *Server) project(c echo.Context) (meta.Project, error) {
	id, err := ids.Parse(ids.ProjectPrefix, c.Param("project"))
	if err != nil {
		return meta.Project{}, apierr.Invalid("project", "must be a project id or prj_ slug")
	}
	ctx, cancel := s.storageCtx(c)
	defer cancel()
	return s.cfg.Meta.GetProject(ctx, id)
}

type tokenJSON struct {
	ID        string   `json:"id"`
	Slug      string   `json:"slug"`
	Name      string   `json:"name"`
	Token     string   `json:"token"`
	Scopes    []string `json:"scopes"`
	CreatedAt string   `json:"createdAt"`
	ExpiresAt *string  `json:"expiresAt"`
	// SQSSecretAccessKey pairs with the slug (the access key id) for the SQS door.
	SQSSecretAccessKey string `json:"sqsSecretAccessKey"`
}

func (s *Server) createToken(c echo.Context) error {
	p, err := s.project(c)
	if err != nil {
		return err
	}
	data, err := readBody(c)
	if err != nil {
		return err
	}
	o, aerr := parseObject(data, "", false, "name", "scopes", "ttlSeconds")
	if aerr != nil {
		return aerr
	}
	name, aerr := displayName(o, "name")
	if aerr != nil {
		return aerr
	}
	scopes, aerr := parseScopes(o)
	if aerr != nil {
		return aerr
	}
	ttl, hasTTL, aerr := o.integer("ttlSeconds", 1, maxTokenTTL)
	if aerr != nil {
		return aerr
	}
	now := s.cfg.Clock.Now().UTC().Truncate(time.Millisecond)
	t := meta.Token{ID: ids.New(), ProjectID: p.ID, Name: name, Scopes: scopes, CreatedAt: now}
	if hasTTL {
		exp := now.Add(time.Duration(ttl) * time.Second)
		t.ExpiresAt = &exp
	}
	jwt, err := s.cfg.Auth.Issue(p.ID, t.ID, scopes, now, t.ExpiresAt)
	if err != nil {
		return err
	}
	ctx, cancel := s.storageCtx(c)
	defer cancel()
	if err := s.cfg.Meta.CreateToken(ctx, t); err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, tokenJSON{
		ID: t.ID.String(), Slug: t.ID.Slug(ids.TokenPrefix), Name: name, Token: jwt,
		Scopes: scopes, CreatedAt: formatTime(now), ExpiresAt: formatTimePtr(t.ExpiresAt),
		SQSSecretAccessKey: s.cfg.Auth.SQSSecret(t.ID),
	})
}

func parseScopes(o *object) ([]string, *apierr.Error) {
	items, ok, err := o.array("scopes", 1, len(auth.AllScopes))
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, apierr.Invalid("scopes", "is required: a list of %s", strings.Join(auth.AllScopes, ", "))
	}
	var out []string
	for i, raw := range items {
		path := "scopes[" + itoa(i) + "]"
		sc, err := parseString(raw, path)
		if err != nil {
			return nil, err
		}
		if !slices.Contains(auth.AllScopes, sc) {
			return nil, apierr.Invalid(path, "unknown scope %q; scopes are %s", sc, strings.Join(auth.AllScopes, ", "))
		}
		if slices.Contains(out, sc) {
			return nil, apierr.Invalid(path, "scope %q appears twice", sc)
		}
		out = append(out, sc)
	}
	return out, nil
}

func (s *Server) revokeToken(c echo.Context) error {
	p, err := s.project(c)
	if err != nil {
		return err
	}
	tid, err := ids.Parse(ids.TokenPrefix, c.Param("token"))
	if err != nil {
		return apierr.Invalid("token", "must be a token id or tok_ slug")
	}
	ctx, cancel := s.storageCtx(c)
	defer cancel()
	if err := s.cfg.Meta.RevokeToken(ctx, p.ID, tid, s.cfg.Clock.Now().UTC()); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// sqsCredentials shows a token's SQS key pair again (operator): the secret is derived, never
// stored, so it can be shown for as long as the signing key that derives it is in the ring.
func (s *Server) sqsCredentials(c echo.Context) error {
	p, err := s.project(c)
	if err != nil {
		return err
	}
	tid, err := ids.Parse(ids.TokenPrefix, c.Param("token"))
	if err != nil {
		return apierr.Invalid("token", "must be a token id or tok_ slug")
	}
	ctx, cancel := s.storageCtx(c)
	defer cancel()
	if _, err := s.cfg.Meta.GetToken(ctx, p.ID, tid); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]string{
		"accessKeyId": tid.Slug(ids.TokenPrefix), "secretAccessKey": s.cfg.Auth.SQSSecret(tid),
	})
}
