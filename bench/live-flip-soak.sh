#!/usr/bin/env bash
# The live byte-flip soak (issue 26, defect 1): the test crates/quarry/tests/live_flip.rs with
# FLIPS bytes (default 1,200) flipped in the block files of a running `quarry serve`, spread
# over every section, instead of CI's 240, on a release build. Each flip is followed by tails,
# counts, a phrase, ranges, a histogram and aggregations, which must answer as before or
# partially with the block named; prints the flips, how many were caught, by section.
set -euo pipefail
cd "$(dirname "$0")/.."
export QUARRY_LIVE_FLIPS=${FLIPS:-1200}
cargo test --release -p quarry --test live_flip -- --nocapture 2>&1 | grep -E "flips under|test result|panicked|silently"
