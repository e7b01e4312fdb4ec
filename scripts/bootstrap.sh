#!/usr/bin/env bash
# Installs the Debian 12 packages that kvcs needs to build, test and run its demo.
# Idempotent; run as root on a fresh Debian 12 machine. KVCS_BOOTSTRAP_S3=1 also installs the S3
# clients used by the store's end-to-end tests; KVCS_BOOTSTRAP_CEPH=1 the one-node Ceph radosgw.
set -euo pipefail

pkgs=(
  build-essential cmake ninja-build pkg-config ccache git
  g++-12 clang-14 libclang-rt-14-dev clang-format
  libboost-dev libssl-dev libgnutls28-dev
  libngtcp2-dev libngtcp2-crypto-gnutls-dev
  nlohmann-json3-dev libzstd-dev libspdlog-dev libfmt-dev libcli11-dev
  libsqlite3-dev libhiredis-dev libjwt-dev redis-server librados-dev
  libgtest-dev libgmock-dev googletest libbenchmark-dev
  python3 curl
  pybind11-dev python3-dev python3-numpy python3-torch
)
if [[ ${KVCS_BOOTSTRAP_S3:-0} == 1 ]]; then
  pkgs+=(awscli s3cmd rclone python3-boto3)
fi
if [[ ${KVCS_BOOTSTRAP_CEPH:-0} == 1 ]]; then
  pkgs+=(ceph-mon ceph-osd radosgw ceph-common uuid-runtime)
fi

missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if ((${#missing[@]})); then
  SUDO=""; [[ $(id -u) -eq 0 ]] || SUDO="sudo"
  echo "bootstrap: installing ${missing[*]}" >&2
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
