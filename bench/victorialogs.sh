#!/usr/bin/env bash
# Builds VictoriaLogs (Apache-2.0), the log database that bench/run-sizes.sh and
# bench/run-ingest.sh measure beside Quarry, from the Go module proxy, once: the binary is
# cached outside the clone, at ~/.cache/quarry/victoria-logs-$VERSION/victoria-logs, and its
# path printed on stdout (progress goes to stderr). The module cache is read-only, so the
# module is copied somewhere writable and `./app/victoria-logs` built there, without cgo.
# Its go.mod asks for Go 1.26.5 or newer; the go on PATH (else /usr/local/go/bin/go) must be
# one, or GOTOOLCHAIN must name one the module proxy serves. Takes about 2 minutes on 2 cores
# (its dependencies are downloaded into the usual module cache); gives a ~22 MB binary.
set -euo pipefail
VERSION=v1.52.1
CACHE="$HOME/.cache/quarry"
BIN="$CACHE/victoria-logs-$VERSION/victoria-logs"
if [ -x "$BIN" ]; then
    echo "$BIN"
    exit 0
fi
GO=$(command -v go || true)
[ -n "$GO" ] || GO=/usr/local/go/bin/go
[ -x "$GO" ] || { echo "go is required to build VictoriaLogs" >&2; exit 1; }
mkdir -p "$(dirname "$BIN")"
WORK="$(mktemp -d "$CACHE/victoria-logs-build-XXXX")"
trap 'chmod -R u+w "$WORK" 2>/dev/null; rm -rf "$WORK"' EXIT
export GOFLAGS="-mod=mod -buildvcs=false" GOCACHE="$CACHE/go-build" CGO_ENABLED=0
echo "victorialogs.sh: downloading github.com/VictoriaMetrics/VictoriaLogs@$VERSION" >&2
(cd "$WORK" && "$GO" mod download -json "github.com/VictoriaMetrics/VictoriaLogs@$VERSION" >"$WORK/module.json")
DIR="$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["Dir"])' "$WORK/module.json")"
cp -r "$DIR" "$WORK/src"
chmod -R u+w "$WORK/src"
echo "victorialogs.sh: building ./app/victoria-logs with $("$GO" version)" >&2
# The version `victoria-logs -version` prints, set as the project's Makefile does.
(cd "$WORK/src" && "$GO" build -o "$BIN.tmp" \
    -ldflags "-X github.com/VictoriaMetrics/VictoriaMetrics/lib/buildinfo.Version=victoria-logs-$VERSION" \
    ./app/victoria-logs) >&2
mv "$BIN.tmp" "$BIN"
echo "$BIN"
