#!/usr/bin/env bash
# Installs what the tests need, builds, and runs every test: unit and end-to-end tests (release
# build), then each libFuzzer target briefly under ASan/UBSan (clang). Exit status 0 = all passed.
#   KVCS_FUZZ_SECONDS=N  seconds per fuzzer (default 10); KVCS_SKIP_FUZZ=1 skips fuzzing.
set -euo pipefail
cd "$(dirname "$0")/.."
# ccache (when installed) keys on paths relative to the checkout, so clones share a cache.
export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=1
KVCS_BOOTSTRAP_S3=1 KVCS_BOOTSTRAP_CEPH=1 scripts/bootstrap.sh

jobs=$(nproc)
cmake --preset release >/dev/null
cmake --build build/release -j "$jobs"
ctest --preset release -j "$jobs"

if [[ ${KVCS_SKIP_FUZZ:-0} != 1 ]]; then
  cmake --preset fuzz -DKVCS_FUZZ_SECONDS="${KVCS_FUZZ_SECONDS:-10}" >/dev/null
  if cmake --build build/fuzz -j "$jobs" --target kvcs_fuzzers; then
    ctest --preset fuzz -j "$jobs"
  else
    echo "fuzz build failed" >&2
    exit 1
  fi
fi
