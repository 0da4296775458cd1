package main

import (
	"fmt"
	"io"
	"runtime"

	"github.com/spf13/cobra"

	"github.com/queueshq/queues/sdk/go/client"
)

// versionInfo is what `queues version --json` prints.
type versionInfo struct {
	Version   string `json:"version"`
	GoVersion string `json:"goVersion"`
	Platform  string `json:"platform"`
	UserAgent string `json:"userAgent"`
}

// versionCmd prints the binary's version: the one the Go SDK it is built on reports
// (client.Version: the link-time or module version, else dev+<commit>), which is also the
// version in the User-Agent of every request the client commands send. It needs no service.
func (c *cli) versionCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use: "version", Short: "print the version of this binary (and of its Go SDK)",
		Example: `  queues version           # queues dev+1a2b3c4d5e6f (go1.26.8 linux/amd64)
  queues version --json`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return &usageError{msg: "usage: " + cmd.UseLine()}
			}
			return nil
		},
		RunE: func(*cobra.Command, []string) error {
			v := versionInfo{Version: client.Version(), GoVersion: runtime.Version(),
				Platform: runtime.GOOS + "/" + runtime.GOARCH, UserAgent: cliUserAgent()}
			return c.out(v, func(w io.Writer) {
				fmt.Fprintf(w, "queues %s (%s %s)\n", v.Version, v.GoVersion, v.Platform)
			})
		},
	}
	cmd.Flags().BoolVar(&c.json, "json", false, "print JSON instead of text")
	return cmd
}
