#!/usr/bin/env bash
# Runs every test with ctest (the README's second command). Expects scripts/setup.sh
# to have built build/.
set -euo pipefail
cd "$(dirname "$0")/.."
ctest --test-dir build --output-on-failure -j "$(nproc)" "$@"
