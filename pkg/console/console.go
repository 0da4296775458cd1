// Package console is the web console served at /console: a static page (HTML, CSS and plain
// JavaScript modules, embedded in the binary) that signs in with a project token and works
// only through the public /v1 API from the browser. Nothing here reads storage or holds
// state: the page is a client like any SDK, so it can show nothing a token could not fetch.
//
// Every response carries a strict Content-Security-Policy: scripts, styles and fetches only
// from this origin, no inline script or style, no framing, no form posts, no referrer. The
// page keeps the token in sessionStorage, sends it only as the Authorization header of its
// /v1 calls and inserts API data with textContent only.
package console

import (
	"embed"
	"io/fs"
	"net/http"
	"path"
	"strings"

	"github.com/labstack/echo/v4"
)

//go:embed static
var static embed.FS

// Prefix is where the console is served.
const Prefix = "/console"

// ContentSecurityPolicy is sent with every console response.
const ContentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; " +
	"img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// Handler serves the console's files; requests must have Prefix stripped already or not (both
// work): /console and /console/ answer the page, /console/<file> the asset.
func Handler() http.Handler {
	files, _ := fs.Sub(static, "static")
	fileServer := http.FileServer(http.FS(files))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", ContentSecurityPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		// The files change with the binary; revalidating is cheap and a stale page after an
		// upgrade would call the API the old way.
		h.Set("Cache-Control", "no-cache")
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			h.Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		name := strings.TrimPrefix(path.Clean("/"+strings.TrimPrefix(r.URL.Path, Prefix)), "/")
		if name == "" || name == "index.html" {
			serveIndex(w, files)
			return
		}
		r2 := r.Clone(r.Context())
		r2.URL.Path = "/" + name
		fileServer.ServeHTTP(w, r2)
	})
}

// serveIndex writes the page itself (http.FileServer would redirect index.html to ./).
func serveIndex(w http.ResponseWriter, files fs.FS) {
	page, err := fs.ReadFile(files, "index.html")
	if err != nil {
		http.Error(w, "console unavailable", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = w.Write(page)
}

// Mount registers the console on an echo server (the API tier and serve).
func Mount(e *echo.Echo) {
	h := echo.WrapHandler(Handler())
	e.GET(Prefix, h)
	e.HEAD(Prefix, h)
	e.GET(Prefix+"/*", h)
	e.HEAD(Prefix+"/*", h)
}
