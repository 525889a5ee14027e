#!/usr/bin/env bash
# Builds SeaweedFS (Apache-2.0), the S3-compatible object store the object-storage tests run
# against, from the Go module proxy, once: the binary is cached outside the clone and its path
# printed. The module's `replace` directives stop a plain `go install`, so the module is copied
# somewhere writable and built there. Takes several minutes; gives a ~230 MB binary.
set -euo pipefail
VERSION=v0.0.0-20261109003541-7506e5f91cd6
CACHE="$HOME/.cache/quarry"
BIN="$CACHE/weed-$VERSION"
if [ -x "$BIN" ]; then
    echo "$BIN"
    exit 0
fi
command -v go >/dev/null 2>&1 || { echo "go is required to build SeaweedFS" >&2; exit 1; }
mkdir -p "$CACHE"
WORK="$(mktemp -d "$CACHE/weed-build-XXXX")"
trap 'chmod -R u+w "$WORK" 2>/dev/null; rm -rf "$WORK"' EXIT
export GOFLAGS=-mod=mod GOPATH="$WORK/gopath" GOMODCACHE="$WORK/gopath/pkg/mod" GOCACHE="$CACHE/go-build"
(cd "$WORK" && go mod download -json "github.com/seaweedfs/seaweedfs@$VERSION" >"$WORK/module.json")
DIR="$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["Dir"])' "$WORK/module.json")"
cp -r "$DIR" "$WORK/src"
chmod -R u+w "$WORK/src"
(cd "$WORK/src" && go build -o "$BIN.tmp" ./weed) >&2
mv "$BIN.tmp" "$BIN"
echo "$BIN"
