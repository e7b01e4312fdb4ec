#!/usr/bin/env python3
"""Sustained mixed load on kvcs's front doors, with and without a hostile client (issue 19).

Starts each server as a real process (`kvcs store`, `kvcs index --open`, `kvcs relay --open` fed
by `kvcs moq-pub --relay`), samples its RSS from /proc/<pid>/status every second, and runs the
client side (kvcs_load_client) once per phase against the same process:

  store, index   warm-up, clean, slowloris (partial request heads), idle (idle keep-alives)
  relay          warm-up, clean, flood (half-open handshakes and junk Initials)

Prints, per phase, requests/s, p50/p99/max latency and errors of the well-behaved clients (errors
must be 0), the hostile client's counters, and the server's RSS (start, end, max of the phase),
then the RSS series. Servers run with their default limits.

  python3 bench/load/run_load.py --kvcs build/release/src/cli/kvcs \\
      --client build/release/bench/load/kvcs_load_client [--duration 60] [--clients 100]

--duration is per phase (default 60 s; --duration 300 for five-minute phases), --services picks
some of store,index,relay. --smoke (ctest) runs short phases and exits 1 if a well-behaved client
saw an error; it asserts no timing.
"""
import argparse
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time

ACCESS_KEY, SECRET_KEY = "LOADTESTKEY", "load-test-secret-0123456789"


def raise_nofile():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


class Server:
    """A server process; its port parsed from the first stdout line matching `pattern`."""

    def __init__(self, argv, pattern, env=None):
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     text=True, env=env, preexec_fn=raise_nofile)
        self.lines = []
        deadline = time.time() + 20
        self.port = None
        while time.time() < deadline and self.port is None:
            line = self.proc.stdout.readline()
            if not line:
                break
            self.lines.append(line.rstrip())
            m = re.search(pattern, line)
            if m:
                self.port = int(m.group(1))
        if self.port is None:
            self.stop()
            raise RuntimeError("no port from %s: %s" % (argv[1], "\n".join(self.lines[-10:])))
        threading.Thread(target=self._drain, daemon=True).start()

    def _drain(self):
        for line in self.proc.stdout:
            self.lines.append(line.rstrip())
            del self.lines[:-200]

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


class RssSampler:
    """VmRSS of `pid` every `period` seconds, tagged with the current phase."""

    def __init__(self, pid, period=1.0):
        self.pid, self.period, self.phase = pid, period, "start"
        self.samples = []  # (seconds since start, phase, KiB)
        self.t0 = time.time()
        self.stop_event = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def rss_kib(self):
        try:
            with open("/proc/%d/status" % self.pid) as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        return int(line.split()[1])
        except OSError:
            return None
        return None

    def _run(self):
        while not self.stop_event.is_set():
            kib = self.rss_kib()
            if kib is not None:
                self.samples.append((time.time() - self.t0, self.phase, kib))
            self.stop_event.wait(self.period)

    def stop(self):
        self.stop_event.set()
        self.thread.join()

    def phase_stats(self, phase):
        v = [k for _, p, k in self.samples if p == phase]
        return (v[0], v[-1], max(v)) if v else (0, 0, 0)


def loadavg():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def run_phase(args, service, port, phase, hostile, duration, extra):
    argv = [args.client, "--service", service, "--port", str(port), "--clients",
            str(args.clients), "--duration", str(duration), "--hostile", hostile] + extra
    env = dict(os.environ, KVCS_S3_ACCESS_KEY=ACCESS_KEY, KVCS_S3_SECRET_KEY=SECRET_KEY)
    r = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=duration + 120,
                       preexec_fn=raise_nofile)
    if r.returncode != 0 or not r.stdout.strip():
        return {"requests": 0, "errors": 1, "retries": 0, "rps": 0, "p50_ms": 0, "p99_ms": 0,
                "max_ms": 0, "error_samples": ["client failed: " + r.stderr.strip()[-400:]],
                "hostile": None}
    return json.loads(r.stdout.strip().splitlines()[-1])


def start_service(args, service, tmp):
    env = dict(os.environ, KVCS_S3_ACCESS_KEY=ACCESS_KEY, KVCS_S3_SECRET_KEY=SECRET_KEY)
    extra, helpers = [], []
    if service == "store":
        root = os.path.join(tmp, "store")
        server = Server([args.kvcs, "store", "--root", root, "--listen", "127.0.0.1:0"],
                        r"listening on https?://[^:]+:(\d+)", env=env)
    elif service == "index":
        server = Server([args.kvcs, "index", "--listen", "127.0.0.1:0", "--db", "", "--open"],
                        r"listening on https?://[^:]+:(\d+)")
    else:
        server = Server([args.kvcs, "relay", "--listen", "127.0.0.1:0", "--open"],
                        r"listening on moqt://[^ ]*:(\d+)/")
        groups, objects = 4, 16
        pub = subprocess.Popen(
            [args.kvcs, "moq-pub", "--relay", "moqt://127.0.0.1:%d/" % server.port, "--insecure",
             "--namespace", "kvcs-load", "--track", "t", "--groups", str(groups), "--objects",
             str(objects), "--size", "1024", "--rate", "0"],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        helpers.append(pub)
        deadline = time.time() + 20
        while time.time() < deadline:  # until it has produced every object
            line = pub.stdout.readline()
            if not line or line.startswith("produced "):
                break
        threading.Thread(target=lambda: [None for _ in pub.stdout], daemon=True).start()
        extra = ["--track", "kvcs-load/t", "--objects", str(groups * objects),
                 "--flood-pps", str(args.flood_pps)]
    if service != "relay":
        extra = ["--hog-connections", str(args.hog_connections)]
    return server, helpers, extra


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kvcs", required=True)
    ap.add_argument("--client", required=True, help="kvcs_load_client")
    ap.add_argument("--services", default="store,index,relay")
    ap.add_argument("--duration", type=float, default=60, help="seconds per phase")
    ap.add_argument("--warmup", type=float, default=None, help="seconds (default duration/4)")
    ap.add_argument("--clients", type=int, default=100, help="well-behaved clients")
    ap.add_argument("--hog-connections", type=int, default=2000)
    ap.add_argument("--flood-pps", type=float, default=2000)
    ap.add_argument("--smoke", action="store_true",
                    help="short phases, fewer clients; exit 1 on any well-behaved error")
    args = ap.parse_args()
    if args.smoke:
        args.duration, args.clients = min(args.duration, 1.5), min(args.clients, 16)
        args.hog_connections, args.flood_pps = min(args.hog_connections, 400), 500
    warmup = args.warmup if args.warmup is not None else max(0.5, args.duration / 4)
    print("load average at start: %s (%d cores)" % (loadavg(), os.cpu_count()))
    print("%d well-behaved clients, %.0f s per phase (warm-up %.0f s)" %
          (args.clients, args.duration, warmup))
    tmp = tempfile.mkdtemp(prefix="kvcs-load-")
    failed = False
    try:
        for service in args.services.split(","):
            server, helpers, extra = start_service(args, service, tmp)
            sampler = RssSampler(server.proc.pid, period=0.25 if args.smoke else 1.0)
            phases = [("warm-up", "none", warmup), ("clean", "none", args.duration)]
            if service == "relay":
                phases.append(("flood", "flood", args.duration))
            else:
                phases += [("slowloris", "slowloris", args.duration),
                           ("idle", "idle", args.duration)]
            print("\n== %s (pid %d, port %d)" % (service, server.proc.pid, server.port))
            print("%-10s %9s %8s %8s %8s %7s %7s  %-26s %s" %
                  ("phase", "req/s", "p50 ms", "p99 ms", "max ms", "errors", "retries",
                   "RSS MiB start/end/max", "hostile"))
            for name, hostile, dur in phases:
                sampler.phase = name
                r = run_phase(args, service, server.port, name, hostile, dur, extra)
                time.sleep(sampler.period + 0.1)  # one more RSS sample of the phase
                a, b, c = sampler.phase_stats(name)
                print("%-10s %9.1f %8.2f %8.2f %8.2f %7d %7d  %6.1f / %6.1f / %6.1f       %s" %
                      (name, r["rps"], r["p50_ms"], r["p99_ms"], r["max_ms"], r["errors"],
                       r["retries"], a / 1024, b / 1024, c / 1024,
                       json.dumps(r["hostile"]) if r["hostile"] else "-"), flush=True)
                if r["errors"]:
                    failed = True
                    print("   errors: %s" % r["error_samples"])
            sampler.phase = "end"
            sampler.stop()
            step = max(1, len(sampler.samples) // 24)
            print("RSS over time (s: MiB): " + ", ".join(
                "%.0f: %.1f" % (t, k / 1024) for t, _, k in sampler.samples[::step]))
            server.stop()
            for h in helpers:
                h.terminate()
                h.wait(10)
            if server.proc.returncode not in (0, -15):
                failed = True
                print("server exited %s: %s" % (server.proc.returncode, server.lines[-5:]))
            admission = [l for l in server.lines if "connections admitted" in l]
            if admission:
                print("server: " + admission[-1])
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("\nload average at end: %s" % loadavg())
    if args.smoke and failed:
        print("FAILED: a well-behaved client saw errors")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
