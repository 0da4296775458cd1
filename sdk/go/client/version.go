package client

import "runtime/debug"

// modulePath is this SDK's module, looked up in the build information of the program that
// links it.
const modulePath = "github.com/queueshq/queues/sdk/go"

// repoModule is the module of the repository the SDK lives in (the service and its CLI): a
// program built from that checkout carries the SDK as a replaced dependency, and the checkout's
// VCS stamp describes the SDK too.
const repoModule = "github.com/queueshq/queues"

// version, when set at link time (go build -ldflags "-X
// github.com/queueshq/queues/sdk/go/client.version=v1.4.0"), is the version Version reports.
var version string

// Version is this SDK's version, sent in every request's User-Agent as queues-go/<version>
// and printed by `queues version`. In order: the link-time version; the module's version
// when a program requires it (go get …@v1.4.0); else "dev", with "+<revision>" (12 hex
// digits of the commit, and ".dirty" when the work tree had changes) when the program was
// built from a checkout of this repository. Plain `go build` has no module version, so
// "dev+<revision>" is what a source build reports.
func Version() string {
	if version != "" {
		return version
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "dev"
	}
	return versionFrom(bi)
}

// versionFrom reads the version out of a program's build information.
func versionFrom(bi *debug.BuildInfo) string {
	mod := &bi.Main
	if bi.Main.Path != modulePath {
		mod = nil
		for _, d := range bi.Deps {
			if d.Path == modulePath {
				mod = d
				if d.Replace != nil {
					mod = d.Replace
				}
				break
			}
		}
	}
	if mod != nil && mod.Version != "" && mod.Version != "(devel)" {
		return mod.Version
	}
	if bi.Main.Path != modulePath && bi.Main.Path != repoModule {
		return "dev" // the VCS settings describe the program's checkout, not this module's
	}
	var rev string
	dirty := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return "dev"
	}
	v := "dev+" + rev[:min(12, len(rev))]
	if dirty {
		v += ".dirty"
	}
	return v
}

// UserAgent is the User-Agent a client sends unless WithUserAgent replaces it:
// "queues-go/<Version>".
func UserAgent() string { return "queues-go/" + Version() }
