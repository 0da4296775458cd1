package main

import (
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/spf13/pflag"
)

// Environment variables set flags through the flag's own parser: the flag's default is the
// one default (in its definition, so -help shows it), a variable overrides it and the command
// line overrides both, and a malformed value (QUEUES_RATE_SEND=ten, QUEUES_REDIS_CLUSTER=yes)
// stops the process with an error naming the variable instead of silently meaning the default.

// envBound maps each FlagSet to its flags' variables (flag name -> variable name).
var envBound sync.Map

// bindEnv makes variable envName set flag name of fs when parseFlags runs.
func bindEnv(fs *pflag.FlagSet, name, envName string) {
	m, _ := envBound.LoadOrStore(fs, &sync.Map{})
	m.(*sync.Map).Store(name, envName)
}

// parseFlags applies the bound variables that are set and not empty, then parses args
// (parseArgs).
func parseFlags(fs *pflag.FlagSet, args []string) error {
	if err := applyEnv(fs); err != nil {
		return err
	}
	return parseArgs(fs, args)
}

// parseArgs parses args as Go's flag package would have: flags end at the first argument that
// is not one, and one dash is as good as two (longFlagsOneDashIn). Commands without variables
// (migrate, admin, dev, health, bench) call it directly.
func parseArgs(fs *pflag.FlagSet, args []string) error {
	fs.SetInterspersed(false)
	return fs.Parse(longFlagsOneDashIn(fs, args))
}

// longFlagsOneDashIn rewrites -name and -name=value to the double-dash form when name is a
// long flag of fs (health's -q included), so docs and scripts written for Go's flag package keep working
// under pflag, which would read -name as a group of shorthands. It stops where parsing stops:
// at "--" and at the first argument that is not a flag; a flag's value (-group -g1) is never
// rewritten; -h stays pflag's help.
func longFlagsOneDashIn(fs *pflag.FlagSet, args []string) []string {
	out := slices.Clone(args)
	for i := 0; i < len(out); i++ {
		a := out[i]
		if a == "--" || len(a) < 2 || a[0] != '-' {
			break
		}
		name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		f := fs.Lookup(name)
		if !strings.HasPrefix(a, "--") && (f != nil || len(name) > 1) {
			out[i] = "-" + a // an unknown -bogus too: "unknown flag: --bogus" names it whole
		}
		if f != nil && f.NoOptDefVal == "" && !hasValue {
			i++ // the next argument is this flag's value
		}
	}
	return out
}

func applyEnv(fs *pflag.FlagSet) error {
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
