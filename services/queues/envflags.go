package main

import (
	"fmt"
	"os"
	"sort"

	"github.com/spf13/pflag"
)

// Environment variables set flags through the flag's own parser: the flag's default is the
// one default (in its definition, so --help shows it), a variable overrides it and the command
// line overrides both, and a malformed value (QUEUES_RATE_SEND=ten, QUEUES_REDIS_CLUSTER=yes)
// stops the process with an error naming the variable instead of silently meaning the default.
// Cobra parses the command line first; applyEnv then fills in the flags it did not set.

// envAnnotation is the pflag annotation naming a flag's variable.
const envAnnotation = "queues_env"

// bindEnv makes variable envName set flag name of fs when applyEnv runs.
func bindEnv(fs *pflag.FlagSet, name, envName string) {
	if err := fs.SetAnnotation(name, envAnnotation, []string{envName}); err != nil {
		panic(err) // a flag bound before it is defined: a programming error
	}
}

// applyEnv sets each flag bound with bindEnv that the command line left alone from its
// variable, when that is set and not empty.
func applyEnv(fs *pflag.FlagSet) error {
	var bound []*pflag.Flag
	fs.VisitAll(func(f *pflag.Flag) {
		if len(f.Annotations[envAnnotation]) == 1 && !f.Changed {
			bound = append(bound, f)
		}
	})
	sort.Slice(bound, func(i, j int) bool { return bound[i].Name < bound[j].Name }) // the same first error every run
	for _, f := range bound {
		envName := f.Annotations[envAnnotation][0]
		v, ok := os.LookupEnv(envName)
		if !ok || v == "" {
			continue
		}
		if err := fs.Set(f.Name, v); err != nil {
			return fmt.Errorf("%s=%q: %v", envName, v, err)
		}
	}
	return nil
}
