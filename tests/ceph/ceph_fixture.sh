#!/bin/bash
# CTest fixture for tests/ceph: `up` starts a one-node Ceph radosgw (shared/tools/ceph-up.sh) in
# CEPH_DIR on a free 127.0.0.1 port and writes the port to CEPH_DIR/rgw.port; `down` stops it.
# usage: ceph_fixture.sh up|down <shared/tools dir> <ceph dir>
# Fails (never skips) when Ceph is not installed: CI installs it (KVCS_BOOTSTRAP_CEPH=1).
set -euo pipefail
cmd=$1 tools=$2 dir=$3

stop() {
  [[ -d $dir ]] || return 0
  CEPH_DIR=$dir bash "$tools/ceph-down.sh" || true
  # wait (bounded) for the recorded daemons to exit so the mon ports are free again
  for p in rgw osd mon; do
    pid=$(cat "$dir/$p.pid" 2>/dev/null || true)
    [[ -n $pid ]] || continue
    for _ in $(seq 1 300); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
  done
}

case $cmd in
  up)
    if [[ ! -f $tools/ceph-up.sh ]]; then
      echo "ceph_fixture: $tools/ceph-up.sh not found (set -DKVCS_SHARED_DIR=.../shared)" >&2
      exit 1
    fi
    for b in ceph-mon ceph-osd radosgw monmaptool radosgw-admin uuidgen curl python3; do
      if ! command -v "$b" >/dev/null; then
        echo "ceph_fixture: '$b' is missing: install ceph-mon ceph-osd radosgw ceph-common" \
             "uuid-runtime (KVCS_BOOTSTRAP_CEPH=1 scripts/bootstrap.sh)" >&2
        exit 1
      fi
    done
    stop  # a leftover from an interrupted run
    # ceph-up.sh's monitor uses fixed ports; refuse to talk to somebody else's cluster.
    if (exec 3<>/dev/tcp/127.0.0.1/3300) 2>/dev/null; then
      echo "ceph_fixture: 127.0.0.1:3300 is taken (another Ceph monitor is running)" >&2
      exit 1
    fi
    port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
    mkdir -p "$(dirname "$dir")"
    CEPH_DIR=$dir RGW_PORT=$port MEMSTORE_GB=2 timeout 240 bash "$tools/ceph-up.sh"
    echo "$port" > "$dir/rgw.port"
    ;;
  down)
    stop
    ;;
  *)
    echo "usage: $0 up|down <tools dir> <ceph dir>" >&2
    exit 2
    ;;
esac
