#!/usr/bin/env bash
# The crash soak (issue 10, item 9): the crash test (crates/quarry/tests/crash.rs) with 1,000
# SIGKILLs instead of CI's 20, on a release build. Prints the seed, the kills, the events
# acknowledged and stored; fails on the first event lost or stored twice, or a block that does
# not check. KILLS and SEED override.
set -euo pipefail
cd "$(dirname "$0")/.."
KILLS=${KILLS:-1000}
export QUARRY_CRASH_KILLS=$KILLS
[[ -n ${SEED:-} ]] && export QUARRY_CRASH_SEED=$SEED
cargo test --release -p quarry --test crash -- --nocapture 2>&1 | grep -E "crash test|test result|panicked|acknowledged|stored"
