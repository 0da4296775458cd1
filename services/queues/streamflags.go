package main

import (
	"fmt"

	"github.com/spf13/pflag"

	"github.com/queueshq/queues/pkg/api"
)

// streamFlags are the caps on open receive streams of one replica (docs/streaming.md):
// -stream-max-per-project (QUEUES_STREAM_MAX_PER_PROJECT) and -stream-max-per-replica
// (QUEUES_STREAM_MAX_PER_REPLICA). Past either, an upgrade answers 429 rate_limited.
type streamFlags struct {
	perProject, perReplica int
}

func (f *streamFlags) register(fs *pflag.FlagSet) {
	fs.IntVar(&f.perProject, "stream-max-per-project", api.DefaultStreamsPerProject,
		"streams (receive and topic) one project may hold open on this replica (QUEUES_STREAM_MAX_PER_PROJECT)")
	fs.IntVar(&f.perReplica, "stream-max-per-replica", api.DefaultStreamsPerReplica,
		"streams (receive and topic) this replica holds open in all (QUEUES_STREAM_MAX_PER_REPLICA)")
	bindEnv(fs, "stream-max-per-project", "QUEUES_STREAM_MAX_PER_PROJECT")
	bindEnv(fs, "stream-max-per-replica", "QUEUES_STREAM_MAX_PER_REPLICA")
}

func (f *streamFlags) validate() error {
	if f.perProject < 1 {
		return fmt.Errorf("QUEUES_STREAM_MAX_PER_PROJECT (-stream-max-per-project) = %d: must be 1 or more", f.perProject)
	}
	if f.perReplica < 1 {
		return fmt.Errorf("QUEUES_STREAM_MAX_PER_REPLICA (-stream-max-per-replica) = %d: must be 1 or more", f.perReplica)
	}
	return nil
}

// limits are the flags as the API takes them.
func (f *streamFlags) limits() api.StreamLimits {
	return api.StreamLimits{PerProject: f.perProject, PerReplica: f.perReplica}
}
