package console_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"

	"github.com/queueshq/queues/pkg/console"
)

func TestHeadersAndFiles(t *testing.T) {
	e := echo.New()
	console.Mount(e)
	srv := httptest.NewServer(e)
	defer srv.Close()
	cases := []struct {
		path, ctype, contains string
	}{
		{"/console", "text/html", `<script type="module" src="/console/app.js">`},
		{"/console/", "text/html", `id="view-signin"`},
		{"/console/index.html", "text/html", `id="view-signin"`},
		{"/console/app.js", "javascript", "import * as api"},
		{"/console/api.js", "javascript", "sessionStorage"},
		{"/console/topics.js", "javascript", "export function openTopics"},
		{"/console/style.css", "text/css", "[hidden]"},
	}
	for _, c := range cases {
		res, err := http.Get(srv.URL + c.path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			t.Fatalf("%s: %d", c.path, res.StatusCode)
		}
		if got := res.Header.Get("Content-Type"); !strings.Contains(got, c.ctype) {
			t.Errorf("%s: content type %q, want %s", c.path, got, c.ctype)
		}
		if !strings.Contains(string(body), c.contains) {
			t.Errorf("%s lacks %q", c.path, c.contains)
		}
		if got := res.Header.Get("Content-Security-Policy"); got != console.ContentSecurityPolicy {
			t.Errorf("%s: CSP %q", c.path, got)
		}
		if res.Header.Get("X-Content-Type-Options") != "nosniff" || res.Header.Get("Referrer-Policy") != "no-referrer" {
			t.Errorf("%s: headers %v", c.path, res.Header)
		}
	}
	for _, p := range []string{"/console/missing.js", "/console/../go.mod"} {
		res, err := http.Get(srv.URL + p)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusNotFound {
			t.Errorf("%s: %d, want 404", p, res.StatusCode)
		}
	}
	res, err := http.Post(srv.URL+"/console/app.js", "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusMethodNotAllowed && res.StatusCode != http.StatusNotFound {
		t.Errorf("POST: %d", res.StatusCode)
	}
}

// TestNoInlineScriptOrMarkupInjection holds the page to its CSP and its own rule: no inline
// script or handler attributes, and API data never assigned as markup.
func TestNoInlineScriptOrMarkupInjection(t *testing.T) {
	e := echo.New()
	console.Mount(e)
	srv := httptest.NewServer(e)
	defer srv.Close()
	for _, f := range []string{"/console/", "/console/app.js", "/console/api.js", "/console/topics.js"} {
		res, err := http.Get(srv.URL + f)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		s := string(b)
		for _, bad := range []string{"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "onclick=", "onload=", "<script>", "localStorage"} {
			if strings.Contains(s, bad) {
				t.Errorf("%s contains %q", f, bad)
			}
		}
	}
}
