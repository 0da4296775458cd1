package main

import (
	"flag"
	"fmt"
	"os"
	"sort"
	"sync"
)

// Environment variables set flags through the flag's own parser: the flag's default is the
// one default (in its definition, so -help shows it), a variable overrides it and the command
// line overrides both, and a malformed value (QUEUES_RATE_SEND=ten, QUEUES_REDIS_CLUSTER=yes)
// stops the process with an error naming the variable instead of silently meaning the default.

// envBound maps each FlagSet to its flags' variables (flag name -> variable name).
var envBound sync.Map

// bindEnv makes variable envName set flag name of fs when parseFlags runs.
func bindEnv(fs *flag.FlagSet, name, envName string) {
	m, _ := envBound.LoadOrStore(fs, &sync.Map{})
	m.(*sync.Map).Store(name, envName)
}

// parseFlags applies the bound variables that are set and not empty, then parses args.
func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := applyEnv(fs); err != nil {
		return err
	}
	return fs.Parse(args)
}

func applyEnv(fs *flag.FlagSet) error {
	m, ok := envBound.Load(fs)
	if !ok {
		return nil
	}
	var names []string
	m.(*sync.Map).Range(func(k, _ any) bool { names = append(names, k.(string)); return true })
	sort.Strings(names) // the same first error every run
	for _, name := range names {
		envName, _ := m.(*sync.Map).Load(name)
		v, ok := os.LookupEnv(envName.(string))
		if !ok || v == "" {
			continue
		}
		if err := fs.Set(name, v); err != nil {
			return fmt.Errorf("%s=%q: %v", envName, v, err)
		}
	}
	return nil
}
