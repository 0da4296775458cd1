#!/usr/bin/env bash
# Runs every fuzz target in the repository for FUZZTIME (default 10m), one at a time, nice'd,
# each with one worker, logging to FUZZ_LOGS (default /tmp/queues-fuzz). Not part of make
# test. The targets are found with grep, so a new target is fuzzed without editing this file.
# A failing input is written to the package's testdata/fuzz/<Target>/ by go test: commit it
# with the fix. FUZZ_ONLY=regexp limits the run to matching target names.
set -euo pipefail
cd "$(dirname "$0")/.."
time=${FUZZTIME:-10m}
logs=${FUZZ_LOGS:-/tmp/queues-fuzz}
mkdir -p "$logs"
status=0
while IFS=: read -r file name; do
	[[ -n "${FUZZ_ONLY:-}" && ! "$name" =~ $FUZZ_ONLY ]] && continue
	pkg=./$(dirname "$file")
	log="$logs/$(echo "$pkg" | tr / _)-$name.log"
	echo "$(date -u +%T) $pkg $name ($time) -> $log"
	if nice go test -run '^$' -fuzz "^$name\$" -fuzztime "$time" -parallel 1 -timeout 0 "$pkg" >"$log" 2>&1; then
		grep -E '^fuzz: elapsed' "$log" | tail -n 1
	else
		echo "  FAILED: see $log"; status=1
	fi
done < <(grep -rhoE --include='*_test.go' --exclude-dir=node_modules -H 'func Fuzz[A-Za-z0-9_]+' . |
	sed -E 's#^\./##; s#:func #:#' | sort -u)
exit $status
