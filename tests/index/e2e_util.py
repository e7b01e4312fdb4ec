"""Helpers of the index end-to-end tests (run_index_tests.py, run_holders_tests.py): running the
kvcs binary and polling with a bound (never a sleep used for synchronization)."""
import subprocess
import sys
import time


def run(kvcs, *args, ok=True):
    """Runs `kvcs args...`; exits the test when the outcome is not the expected one (ok=True:
    success, ok=False: failure)."""
    p = subprocess.run([kvcs, *map(str, args)], capture_output=True, text=True, timeout=60)
    if ok and p.returncode != 0:
        sys.exit(f"kvcs {' '.join(map(str, args))} failed ({p.returncode}): {p.stdout}{p.stderr}")
    if not ok and p.returncode == 0:
        sys.exit(f"kvcs {' '.join(map(str, args))} succeeded but should fail")
    return p


def poll(pred, what, bound_s=10.0):
    """The first true value of pred(), asked every 20 ms until `bound_s` seconds have passed."""
    deadline = time.monotonic() + bound_s
    while time.monotonic() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(0.02)  # poll interval, bounded by the deadline
    sys.exit(f"timed out waiting for {what}")
