#!/usr/bin/env bash
# Lints openapi.yaml with Redocly CLI (rules in redocly.yaml). Exits non-zero on any error.
#
# The CLI is installed once, pinned, into a cache folder outside the repository:
#   ${QUEUES_CACHE_DIR:-$HOME/.cache/queues}/redocly
# 2.77.0 is the last release that runs on Node 20 (later ones need Node >= 22.12).
set -euo pipefail

REDOCLY_VERSION=2.77.0
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cache="${QUEUES_CACHE_DIR:-$HOME/.cache/queues}/redocly"
bin="$cache/node_modules/.bin/redocly"

installed_version() {
	node -e 'process.stdout.write(require(process.argv[1]).version)' \
		"$cache/node_modules/@redocly/cli/package.json" 2>/dev/null || true
}

if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
	echo "lint-openapi: node and npm are required (Node 20 or later)" >&2
	exit 2
fi

if [[ ! -x "$bin" || "$(installed_version)" != "$REDOCLY_VERSION" ]]; then
	echo "lint-openapi: installing @redocly/cli@$REDOCLY_VERSION into $cache" >&2
	mkdir -p "$cache"
	# A private package.json keeps npm from walking up into an unrelated project.
	[[ -f "$cache/package.json" ]] || echo '{"name":"queues-redocly","private":true}' >"$cache/package.json"
	npm install --prefix "$cache" --no-audit --no-fund --save-exact --loglevel=error \
		"@redocly/cli@$REDOCLY_VERSION" >&2
fi

cd "$root"
# No telemetry or update checks from a lint run.
export REDOCLY_TELEMETRY=off REDOCLY_SUPPRESS_UPDATE_NOTICE=true
exec "$bin" lint --config redocly.yaml --format "${REDOCLY_FORMAT:-codeframe}" openapi.yaml
