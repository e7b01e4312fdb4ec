#!/usr/bin/env bash
# Installs what kvcs needs, builds it (release), and runs `kvcs demo`. Extra arguments go to
# `kvcs demo` (see `kvcs demo --help`).
set -euo pipefail
cd "$(dirname "$0")/.."
# ccache (when installed) keys on paths relative to the checkout, so clones share a cache.
export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=1
scripts/bootstrap.sh
cmake --preset release >/dev/null
cmake --build build/release -j "$(nproc)" --target kvcs
exec build/release/src/cli/kvcs demo "$@"
