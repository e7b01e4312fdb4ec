#!/usr/bin/env bash
# The project's one-node Ceph 16.2 fixture: a monitor (msgr v2 only), one memstore OSD and, unless
# --no-rgw, a radosgw with the S3 test users. Everything lives in a private DIR and listens on free
# 127.0.0.1 ports, so two fixtures run side by side on one machine. Used by tests/ceph (the CTest
# fixtures ceph_up / ceph_down) and bench/ceph. It reads nothing but DIR and the installed Ceph
# packages (every daemon gets `-c DIR/ceph.conf`; no /etc/ceph, /var/lib/ceph, /var/run/ceph).
#
# usage: scripts/ceph-fixture.sh up [--no-rgw] [--memstore-gb N] DIR
#        scripts/ceph-fixture.sh start-rgw DIR   radosgw again on its port (after a test killed it)
#        scripts/ceph-fixture.sh status DIR      exit 0 when every daemon runs (and radosgw answers)
#        scripts/ceph-fixture.sh down DIR        stop the daemons, remove all but DIR/log
# env:   KVCS_CEPH_TIMEOUT      seconds `up` / `start-rgw` may wait in all (default 240)
#        KVCS_CEPH_MEMSTORE_GB  default of --memstore-gb (2)
#
# After `up`, DIR holds:
#   ceph.conf          the cluster's config: CEPH_CONF for ceph, rados, radosgw-admin and librados.
#                      Auth is none (no cephx), so RADOS clients need no keyring.
#   fixture.env        sourceable KEY=value lines: CEPH_CONF, KVCS_CEPH_MON_HOST and, with radosgw,
#                      KVCS_CEPH_RGW_ENDPOINT, KVCS_CEPH_ACCESS_KEY, KVCS_CEPH_SECRET_KEY
#   mon.port rgw.port  the ports; mon.pid osd.pid rgw.pid the daemons; log/ their logs
# Ceph missing → `up` fails (exit 1) saying how to install it; callers fail, they never skip.
set -euo pipefail

usage() {
  sed -n '8,11p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}
die() {
  echo "ceph-fixture: $*" >&2
  exit 1
}

# The main S3 test user, then the others Ceph's vstart.sh creates (s3-tests' s3tests.conf.SAMPLE).
readonly ACCESS_KEY=0555b35654ad1656d804
readonly SECRET_KEY='h7GhxuBLTrlhVUyxSPUKUV8r/2EI4ngqJxD7iBdBYLhwluN30JaT3Q=='
create_users() {
  local a=(radosgw-admin -c "$D/ceph.conf")
  "${a[@]}" user create --uid testid --access-key "$ACCESS_KEY" --secret "$SECRET_KEY" \
    --display-name 'M. Tester' --email tester@ceph.com >/dev/null || return 1
  "${a[@]}" user create --uid 56789abcdef0123456789abcdef0123456789abcdef0123456789abcdef01234 \
    --access-key NOPQRSTUVWXYZABCDEFG --secret nopqrstuvwxyzabcdefghijklmnabcdefghijklm \
    --display-name john.doe --email john.doe@example.com >/dev/null || return 1
  "${a[@]}" user create --tenant testx \
    --uid 9876543210abcdef0123456789abcdef0123456789abcdef0123456789abcdef \
    --access-key HIJKLMNOPQRSTUVWXYZA --secret opqrstuvwxyzabcdefghijklmnopqrstuvwxyzab \
    --display-name tenanteduser --email tenanteduser@example.com >/dev/null || return 1
  "${a[@]}" user create --uid 0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef \
    --access-key ABCDEFGHIJKLMNOPQRST --secret abcdefghijklmnopqrstuvwxyzabcdefghijklmn \
    --display-name youruseridhere --email s3@example.com --caps 'user-policy=*;roles=*' \
    >/dev/null || return 1
}

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# ceph.conf from FSID, MON_PORT, RGW_PORT (0: no radosgw section) and MEMSTORE_GB.
write_conf() {
  local asok="$D/run/\$cluster-\$name.asok"
  # A UNIX socket path has at most 107 bytes; past that, no admin sockets (nothing here uses them).
  ((${#D} + 32 <= 107)) || asok=""
  cat >"$D/ceph.conf" <<CONF
[global]
fsid = $FSID
mon_host = [v2:127.0.0.1:$MON_PORT]
public_addr = 127.0.0.1
cluster_addr = 127.0.0.1
ms_bind_msgr1 = false
auth_cluster_required = none
auth_service_required = none
auth_client_required = none
ms_mon_client_mode = crc
ms_client_mode = crc
run_dir = $D/run
pid_file = $D/run/\$cluster-\$name.pid
admin_socket = $asok
crash_dir = $D/crash
log_file = $D/log/\$cluster-\$name.log
mon_data = $D/mon/\$cluster-\$id
osd_data = $D/osd/\$cluster-\$id
osd_objectstore = memstore
memstore_device_bytes = $((MEMSTORE_GB << 30))
osd_memory_target = 2147483648
osd_pool_default_size = 1
osd_pool_default_min_size = 1
osd_pool_default_pg_num = 8
osd_pool_default_pgp_num = 8
osd_pool_default_pg_autoscale_mode = off
osd_crush_chooseleaf_type = 0
mon_allow_pool_size_one = true
mon_allow_pool_delete = true
mon_warn_on_pool_no_redundancy = false
mon_warn_on_insecure_global_id_reclaim_allowed = false
mon_max_pg_per_osd = 1000
# A radosgw the fault tests SIGKILL leaves its watches behind; the restarted one waits on them
# (notify timeouts) until the OSD drops them: after 15 s rather than 30.
osd_client_watch_timeout = 15
CONF
  ((RGW_PORT)) || return 0
  cat >>"$D/ceph.conf" <<CONF
[client.rgw.a]
rgw_frontends = beast endpoint=127.0.0.1:$RGW_PORT
rgw_data = $D/rgw
rgw_dns_name = localhost
rgw_lc_debug_interval = 10
rgw_crypt_require_ssl = false
rgw_crypt_s3_kms_backend = testing
rgw_crypt_s3_kms_encryption_keys = testkey-1=YmluCmJvb3N0CmJvb3N0LWJ1aWxkCmNlcGguY29uZgo= testkey-2=aWIKTWFrZWZpbGUKbWFuCm91dApzcmMKVGVzdGluZwo=
CONF
}

ceph_cli() { timeout 20 ceph -c "$D/ceph.conf" --connect-timeout 10 "$@"; }

# pid of daemon $1 (mon|osd|rgw) when it runs and is this fixture's (its command line names DIR,
# so a recycled pid is never signalled); else nothing.
live_pid() {
  local pid
  pid=$(cat "$D/$1.pid" 2>/dev/null) || return 0
  [[ $pid =~ ^[0-9]+$ ]] || return 0
  tr "\\0" " " 2>/dev/null <"/proc/$pid/cmdline" | grep -qF -- "$D/ceph.conf" && echo "$pid"
  return 0
}

# spawn NAME LOG CMD...: starts a daemon in the foreground mode (-f) in the background, without
# the lock's file descriptor, and records its pid in DIR/NAME.pid.
spawn() {
  local name=$1 log=$2
  shift 2
  "$@" >>"$log" 2>&1 </dev/null 9>&- &
  disown $!
  echo $! >"$D/$name.pid"
}

# wait_for NAME CHECK...: polls CHECK until it succeeds; fails (WAIT_FAILED=exited|timeout) when
# daemon NAME exits or the deadline passes.
wait_for() {
  local name=$1
  shift
  until "$@" >/dev/null 2>&1; do
    if [[ -z $(live_pid "$name") ]]; then
      WAIT_FAILED=exited
      return 1
    fi
    if ((SECONDS >= DEADLINE)); then
      WAIT_FAILED=timeout
      return 1
    fi
    sleep 0.5
  done
}

log_tail() {
  local f
  for f in "$D"/log/*"$1"*; do
    [[ -f $f ]] || continue
    echo "---- last lines of $f" >&2
    tail -n 15 "$f" >&2
  done
}

# port_taken NAME: the daemon exited because its port was taken between free_port and its bind.
port_taken() {
  [[ $WAIT_FAILED == exited ]] && grep -qs 'Address already in use' "$D"/log/*"$1"*
}

# no_start NAME WHAT: the daemon did not come up; prints why with its log tail and exits.
no_start() {
  log_tail "$1"
  [[ $WAIT_FAILED == exited ]] && die "$1 exited before $2 (logs in $D/log)"
  die "$1 not ready (waiting for $2) after ${KVCS_CEPH_TIMEOUT:-240} s (logs in $D/log)"
}

# retry_port NAME: after a port clash, a fresh log for the next try.
retry_port() {
  echo "ceph-fixture: $1's port was taken meanwhile; trying another" >&2
  kill -9 "$(cat "$D/$1.pid")" 2>/dev/null || true
  rm -f "$D"/log/*"$1"*
}

osd_up() { ceph_cli osd stat | grep -q ' 1 up'; }
rgw_answers() { curl -s -o /dev/null --max-time 2 "http://127.0.0.1:$RGW_PORT/"; }

start_mon() {
  local try
  for try in 1 2 3; do
    MON_PORT=$(free_port)
    write_conf
    rm -rf "$D/mon" && mkdir -p "$D/mon/ceph-a"
    monmaptool --create --clobber --addv a "[v2:127.0.0.1:$MON_PORT]" --fsid "$FSID" \
      "$D/monmap" >/dev/null
    ceph-mon -c "$D/ceph.conf" --mkfs -i a --monmap "$D/monmap" >>"$D/log/mon.out" 2>&1 ||
      { log_tail mon; die "ceph-mon --mkfs failed"; }
    spawn mon "$D/log/mon.out" ceph-mon -c "$D/ceph.conf" -f -i a
    wait_for mon ceph_cli mon stat && return 0
    port_taken mon || no_start mon "a quorum"
    retry_port mon
  done
  die "no free port for ceph-mon after 3 tries"
}

start_osd() {
  local uuid id
  uuid=$(uuidgen)
  id=$(ceph_cli osd new "$uuid") || die "ceph osd new failed"
  ceph-osd -c "$D/ceph.conf" -i "$id" --mkfs --osd-uuid "$uuid" >>"$D/log/osd.out" 2>&1 ||
    { log_tail osd; die "ceph-osd --mkfs failed"; }
  spawn osd "$D/log/osd.out" ceph-osd -c "$D/ceph.conf" -f -i "$id"
  # No port retry: the OSD picks free ports itself (in ms_bind_port_min..max).
  wait_for osd osd_up || no_start osd "up"
}

start_rgw() {
  spawn rgw "$D/log/rgw.out" radosgw -c "$D/ceph.conf" -f -n client.rgw.a
  wait_for rgw rgw_answers
}

cmd_up() {
  local rgw=1
  MEMSTORE_GB=${KVCS_CEPH_MEMSTORE_GB:-2}
  while (($# > 1)); do
    case $1 in
      --no-rgw) rgw=0 ;;
      --memstore-gb)
        MEMSTORE_GB=$2
        shift
        ;;
      *) usage ;;
    esac
    shift
  done
  [[ $MEMSTORE_GB =~ ^[1-9][0-9]*$ ]] || die "--memstore-gb wants a whole number of GB"
  local b missing=()
  for b in ceph-mon ceph-osd monmaptool ceph uuidgen python3 curl flock timeout; do
    command -v "$b" >/dev/null || missing+=("$b")
  done
  if ((rgw)); then
    for b in radosgw radosgw-admin; do command -v "$b" >/dev/null || missing+=("$b"); done
  fi
  ((${#missing[@]} == 0)) ||
    die "${missing[*]} missing: Ceph is not installed. Install it with" \
      "KVCS_BOOTSTRAP_CEPH=1 scripts/bootstrap.sh" \
      "(ceph-mon ceph-osd radosgw ceph-common uuid-runtime)"

  lock
  stop_all  # a leftover of an interrupted run in the same DIR
  trap stop_all EXIT  # a failed `up` leaves nothing running
  find "$D" -mindepth 1 -maxdepth 1 ! -name .lock -exec rm -rf {} +
  mkdir -p "$D"/{osd/ceph-0,run,log,crash}
  ((rgw)) && mkdir -p "$D/rgw"
  DEADLINE=$((SECONDS + ${KVCS_CEPH_TIMEOUT:-240}))
  FSID=$(uuidgen)
  RGW_PORT=0
  ((rgw)) && RGW_PORT=$(free_port)
  start_mon
  echo "$MON_PORT" >"$D/mon.port"
  start_osd
  {
    echo "CEPH_CONF=$D/ceph.conf"
    echo "KVCS_CEPH_MON_HOST=v2:127.0.0.1:$MON_PORT"
  } >"$D/fixture.env"
  if ((rgw)); then
    # The users first: with no radosgw watching yet, nothing waits on a notify to a killed one.
    create_users || { log_tail client; die "radosgw-admin user create failed"; }
    local try
    for try in 1 2 3; do
      start_rgw && break
      port_taken rgw || no_start rgw "answer on http://127.0.0.1:$RGW_PORT/"
      ((try < 3)) || die "no free port for radosgw after 3 tries"
      retry_port rgw
      RGW_PORT=$(free_port)
      write_conf
    done
    echo "$RGW_PORT" >"$D/rgw.port"
    {
      echo "KVCS_CEPH_RGW_ENDPOINT=http://127.0.0.1:$RGW_PORT"
      echo "KVCS_CEPH_ACCESS_KEY=$ACCESS_KEY"
      echo "KVCS_CEPH_SECRET_KEY='$SECRET_KEY'"
    } >>"$D/fixture.env"
    echo "ceph-fixture: radosgw ready on http://127.0.0.1:$RGW_PORT," \
      "monitor v2:127.0.0.1:$MON_PORT" \
      "(pids mon $(cat "$D/mon.pid") osd $(cat "$D/osd.pid") rgw $(cat "$D/rgw.pid"); $D)"
  else
    echo "ceph-fixture: Ceph ready (no radosgw), monitor v2:127.0.0.1:$MON_PORT" \
      "(pids mon $(cat "$D/mon.pid") osd $(cat "$D/osd.pid"); CEPH_CONF=$D/ceph.conf)"
  fi
  trap - EXIT
}

cmd_start_rgw() {
  [[ -f $D/rgw.port && -f $D/ceph.conf ]] || die "$D has no radosgw (run \`up\` first)"
  RGW_PORT=$(cat "$D/rgw.port")
  [[ -z $(live_pid rgw) ]] || die "radosgw already runs (pid $(live_pid rgw))"
  DEADLINE=$((SECONDS + ${KVCS_CEPH_TIMEOUT:-240}))
  start_rgw || no_start rgw "answer on http://127.0.0.1:$RGW_PORT/"
}

# Stops the daemons: SIGTERM to the monitor, SIGKILL to radosgw (it takes about 5 s to wind down
# and keeps no state) and to the OSD (on a clean stop memstore writes all it holds to disk, only
# for it to be removed); SIGKILL to whatever still runs 5 s later; then waits (5 s at most) until
# all are gone.
stop_all() {
  local p pid sig pids=()
  for p in rgw osd mon; do
    pid=$(live_pid "$p")
    [[ -n $pid ]] || continue
    pids+=("$pid")
    sig=KILL
    [[ $p != mon ]] || sig=TERM
    kill -s "$sig" "$pid" 2>/dev/null || true
  done
  ((${#pids[@]})) || return 0
  wait_gone 5 "${pids[@]}" || kill -9 "${pids[@]}" 2>/dev/null || true
  wait_gone 5 "${pids[@]}" || echo "ceph-fixture: pids ${pids[*]} survive SIGKILL" >&2
}

# wait_gone SECONDS PID...: true once none of the PIDs runs (a zombie, e.g. a daemon a failed `up`
# started and killed, does not count); false after SECONDS.
wait_gone() {
  local end=$((SECONDS + $1)) pid st left
  shift
  while :; do
    left=0
    for pid in "$@"; do
      # /proc/PID/stat: "pid (comm) state ..."; the daemons' comm has no spaces.
      read -r _ _ st _ 2>/dev/null <"/proc/$pid/stat" || continue
      [[ $st == Z ]] || left=1
    done
    ((left)) || return 0
    ((SECONDS < end)) || return 1
    sleep 0.1
  done
}

cmd_down() {
  [[ -d $D ]] || return 0
  lock
  stop_all
  find "$D" -mindepth 1 -maxdepth 1 ! -name .lock ! -name log -exec rm -rf {} +
}

cmd_status() {
  [[ -f $D/ceph.conf ]] || die "$D holds no fixture"
  local p pid ok=0
  for p in mon osd rgw; do
    [[ $p != rgw || -f $D/rgw.port ]] || continue
    pid=$(live_pid "$p")
    if [[ -n $pid ]]; then echo "$p: running (pid $pid)"; else
      echo "$p: not running"
      ok=1
    fi
  done
  echo "monitor: v2:127.0.0.1:$(cat "$D/mon.port" 2>/dev/null)"
  if [[ -f $D/rgw.port ]]; then
    RGW_PORT=$(cat "$D/rgw.port")
    if rgw_answers; then echo "radosgw: answers on http://127.0.0.1:$RGW_PORT"; else
      echo "radosgw: no answer on http://127.0.0.1:$RGW_PORT"
      ok=1
    fi
  fi
  return $ok
}

# One command at a time per DIR (the daemons do not inherit the lock).
lock() {
  exec 9>"$D/.lock"
  if ! flock -n 9; then
    echo "ceph-fixture: waiting for $D/.lock (another ceph-fixture.sh is working on $D)" >&2
    flock -w 300 9 || die "$D/.lock still held after 300 s"
  fi
}

(($# >= 2)) || usage
cmd=$1
shift
D=${*: -1}
[[ $D == /* ]] || D=$PWD/$D
D=${D%/}
case $cmd in
  up)
    mkdir -p "$D"
    cmd_up "$@"
    ;;
  start-rgw) (($# == 1)) || usage; cmd_start_rgw ;;
  status) (($# == 1)) || usage; cmd_status ;;
  down) (($# == 1)) || usage; cmd_down ;;
  *) usage ;;
esac
