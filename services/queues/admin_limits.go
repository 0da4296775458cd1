package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/meta"
	"github.com/queueshq/queues/pkg/meta/dynamometa"
	"github.com/queueshq/queues/pkg/tenancy"
)

// adminLimitsCommand is queues admin project limits get|set.
var adminLimitsCommand = operatorCommand{
	use: "limits", summary: "read or change a project's own limits",
	long: `Limits: maxQueues, maxSubscriptions, maxTopics, maxStoredBytes, requestsPerSecond,
maxWaitingReceives, sendBytesPerSecond.
"default" returns a limit to the operator's default (QUEUES_DEFAULT_LIMITS, which this
command reads to print the effective values). Output is JSON: the effective limits and the
project's own values.`,
	example: `  queues admin project limits get --project PROJECT
  queues admin project limits set --project PROJECT NAME=VALUE|NAME=default …`,
	subs: []operatorCommand{
		{use: "get", summary: "print a project's limits", define: defineAdminLimits("get")},
		{use: "set NAME=VALUE|NAME=default …", summary: "change a project's own limits", define: defineAdminLimits("set")},
	},
}

// defineAdminLimits defines admin project limits get or set (verb), which read or change a
// project's own limits directly in DynamoDB.
func defineAdminLimits(verb string) func(fs *pflag.FlagSet) operatorRun {
	return func(fs *pflag.FlagSet) operatorRun {
		var st storeFlags
		st.register(fs)
		project := fs.String("project", "", "project id or prj_ slug")
		var ten tenancyFlags
		ten.registerLimits(fs)
		return func(ctx context.Context, args []string) error {
			return runAdminLimits(ctx, verb, &st, *project, &ten, args)
		}
	}
}

func runAdminLimits(ctx context.Context, verb string, st *storeFlags, project string, ten *tenancyFlags, args []string) error {
	if err := ten.validateLimits(); err != nil {
		return err
	}
	lim := ten.defaults
	pid, err := ids.Parse(ids.ProjectPrefix, project)
	if err != nil {
		return fmt.Errorf("-project: %w", err)
	}
	patch, err := parseLimitArgs(verb, args)
	if err != nil {
		return err
	}
	ddb, err := st.client(ctx)
	if err != nil {
		return err
	}
	store := dynamometa.New(ddb, st.table)
	var own meta.Limits
	if verb == "get" {
		own, err = store.GetLimits(ctx, pid)
	} else {
		own, err = store.UpdateLimits(ctx, pid, patch)
	}
	if err != nil {
		return fmt.Errorf("project %s: %w", project, err)
	}
	out := json.NewEncoder(os.Stdout)
	out.SetIndent("", "  ")
	return out.Encode(map[string]any{"project": pid.String(), "limits": lim.With(own), "own": own})
}

// parseLimitArgs reads set's NAME=VALUE and NAME=default arguments (get takes none).
func parseLimitArgs(verb string, args []string) (meta.LimitsPatch, error) {
	if verb == "get" {
		if len(args) > 0 {
			return nil, fmt.Errorf("get takes no arguments (got %q)", args)
		}
		return nil, nil
	}
	if len(args) == 0 {
		return nil, errors.New("set needs NAME=VALUE arguments, e.g. maxQueues=5000 requestsPerSecond=default")
	}
	patch := meta.LimitsPatch{}
	for _, a := range args {
		name, value, ok := strings.Cut(a, "=")
		if !ok {
			return nil, fmt.Errorf("%q: want NAME=VALUE or NAME=default", a)
		}
		if value == "default" || value == "null" {
			if why := tenancy.CheckValue(name, 1); strings.HasPrefix(why, "unknown") {
				return nil, fmt.Errorf("%s: %s", name, why)
			}
			patch[name] = nil
			continue
		}
		v, err := strconv.ParseInt(value, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%s: %q is not an integer", name, value)
		}
		if why := tenancy.CheckValue(name, v); why != "" {
			return nil, fmt.Errorf("%s: %s", name, why)
		}
		patch[name] = &v
	}
	return patch, nil
}
