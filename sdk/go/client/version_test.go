package client

import (
	"context"
	"net/http"
	"net/http/httptest"
	"runtime/debug"
	"testing"
)

func TestVersionFrom(t *testing.T) {
	rev := "0123456789abcdef0123456789abcdef01234567"
	vcs := []debug.BuildSetting{{Key: "vcs.revision", Value: rev}}
	dirty := append(vcs[:1:1], debug.BuildSetting{Key: "vcs.modified", Value: "true"})
	for _, tc := range []struct {
		name string
		bi   debug.BuildInfo
		want string
	}{
		{"source build, no VCS stamp", debug.BuildInfo{Main: debug.Module{Path: modulePath, Version: "(devel)"}}, "dev"},
		{"source build of a commit", debug.BuildInfo{Main: debug.Module{Path: modulePath, Version: "(devel)"}, Settings: vcs}, "dev+0123456789ab"},
		{"source build with changes", debug.BuildInfo{Main: debug.Module{Path: modulePath, Version: "(devel)"}, Settings: dirty}, "dev+0123456789ab.dirty"},
		{"go install …@v1.4.0", debug.BuildInfo{Main: debug.Module{Path: modulePath, Version: "v1.4.0"}, Settings: vcs}, "v1.4.0"},
		{"an application requiring the SDK", debug.BuildInfo{Main: debug.Module{Path: "example.com/app", Version: "(devel)"},
			Deps: []*debug.Module{{Path: "golang.org/x/net", Version: "v0.1.0"}, {Path: modulePath, Version: "v1.3.2"}}, Settings: vcs}, "v1.3.2"},
		{"an application with a replaced SDK", debug.BuildInfo{Main: debug.Module{Path: "example.com/app"},
			Deps: []*debug.Module{{Path: modulePath, Version: "v1.3.2", Replace: &debug.Module{Path: "../queues"}}}, Settings: vcs}, "dev"},
		{"the queues binary built from its checkout", debug.BuildInfo{Main: debug.Module{Path: repoModule, Version: "(devel)"},
			Deps: []*debug.Module{{Path: modulePath, Version: "v0.0.0-00010101000000-000000000000", Replace: &debug.Module{Path: "./sdk/go"}}}, Settings: vcs}, "dev+0123456789ab"},
	} {
		if got := versionFrom(&tc.bi); got != tc.want {
			t.Errorf("%s: versionFrom = %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestUserAgentSent: every request of a client made without WithUserAgent names the SDK and
// its version; WithUserAgent replaces it.
func TestUserAgentSent(t *testing.T) {
	uas := make(chan string, 2)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		uas <- r.Header.Get("User-Agent")
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"queues":[]}`))
	}))
	defer hs.Close()
	for _, tc := range []struct {
		opts []Option
		want string
	}{
		{nil, "queues-go/" + Version()},
		{[]Option{WithUserAgent("my-app/2 " + UserAgent())}, "my-app/2 queues-go/" + Version()},
	} {
		c, err := New(hs.URL, tc.opts...)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.ListQueues(context.Background(), ListQueuesInput{}); err != nil {
			t.Fatal(err)
		}
		if got := <-uas; got != tc.want {
			t.Errorf("User-Agent %q, want %q", got, tc.want)
		}
	}
	if Version() == "" {
		t.Error("Version is empty")
	}
}
