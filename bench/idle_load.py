#!/usr/bin/env python3
"""Stand-ins for the loads seed 003 measured, for bench/idle.sh to record
idle periods under (the guest has neither schbench, ebizzy nor a running
PostgreSQL). Processes, not threads, so that Python's GIL does not
serialise them; every process stops by itself at the deadline, so nothing
is left behind.

    idle_load.py wakeup SECONDS     schbench-like
    idle_load.py sleepy SECONDS     "sleeping ebizzy"-like
    idle_load.py pingpong SECONDS   pgbench-like

- wakeup: as schbench, message processes each wake their workers (here 2
  messengers x 2 workers, over pipes), each worker runs a short request
  (THINK_US of work) and answers, and the messenger sleeps WAKEUP_SLEEP_US
  before the next round: wake-up latency dominated idle periods.
- sleepy: as seed 003's ebizzy with `-i 10000`, each worker (one per CPU)
  searches a buffer for records (SEARCH_BYTES) and sleeps 10 ms between
  searches.
- pingpong: as pgbench's closed loop with no think time, each client sends
  a request over a TCP loopback socket to its own server process (as
  PostgreSQL forks one backend per connection), which does QUERY_US of
  work and answers; CLIENTS pairs.
"""

import os
import select
import socket
import sys
import time
import traceback

# The 2016 schbench.c defaults to 2 message threads of 16 workers, each
# worker thinking 10 ms (-c) and the messenger sleeping 10 ms (-s). Under
# QEMU TCG on one host thread, with 4 vCPUs, 2 x 2 workers, 200 us of
# request and 2 ms between rounds keep CPUs idle between rounds and give a
# 3 s recording thousands of idle periods.
MESSENGERS = 2
WORKERS = 2
THINK_US = 200
WAKEUP_SLEEP_US = 2000
# ebizzy's -i 10000: 10 ms between searches (the seed's runs).
SLEEPY_INTERVAL_US = 10000
# One search, ebizzy's work between sleeps: a find over 256 KiB of random
# bytes, a short burst of CPU and memory work.
SEARCH_BYTES = 256 * 1024
# Client/server pairs: 2 keep half of the VM's 4 CPUs idle between
# messages, as seed 003's 4 clients left most of a POWER9 idle; 4 pairs
# keep all 4 vCPUs busy (a first run recorded 47 idle periods in 3 s).
CLIENTS = 2
QUERY_US = 50


def spin(us):
    end = time.perf_counter() + us / 1e6
    while time.perf_counter() < end:
        pass


def fork(fn, *args):
    """Runs fn(*args) in a child that exits after it; returns its pid."""
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            fn(*args)
        except Exception:
            traceback.print_exc()
            code = 1
        os._exit(code)
    return pid


def worker(deadline, wake_r, done_w):
    # A woken worker always answers, so its messenger never waits in vain;
    # it ends when no wake-up came for a second past the deadline (its
    # siblings hold copies of the pipes, so it would never see EOF).
    while select.select([wake_r], [], [], max(0, deadline + 1 - time.monotonic()))[0]:
        os.read(wake_r, 1)
        spin(THINK_US)
        os.write(done_w, b"d")


def messenger(deadline):
    pipes = []
    for _ in range(WORKERS):
        wake_r, wake_w = os.pipe()
        done_r, done_w = os.pipe()
        fork(worker, deadline, wake_r, done_w)
        pipes.append((wake_w, done_r))
    while time.monotonic() < deadline:
        for wake_w, _ in pipes:
            os.write(wake_w, b"w")
        for _, done_r in pipes:
            os.read(done_r, 1)
        time.sleep(WAKEUP_SLEEP_US / 1e6)
    if reap():
        raise RuntimeError("a worker failed")


def wakeup(deadline):
    for _ in range(MESSENGERS):
        fork(messenger, deadline)


def searcher(deadline):
    buf = os.urandom(SEARCH_BYTES)
    key = b"\x00\x01\x02\x03\x04\x05"  # a record that is (almost) never there
    while time.monotonic() < deadline:
        buf.find(key)
        time.sleep(SLEEPY_INTERVAL_US / 1e6)


def sleepy(deadline):
    for _ in range(os.cpu_count() or 1):
        fork(searcher, deadline)


def server(conn):
    while True:
        req = conn.recv(64)
        if not req:
            return
        spin(QUERY_US)
        conn.sendall(b"r" * len(req))


def client(deadline, port):
    with socket.create_connection(("127.0.0.1", port)) as s:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        while time.monotonic() < deadline:
            s.sendall(b"q" * 32)
            s.recv(64)


def pingpong(deadline):
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(CLIENTS)
        port = listener.getsockname()[1]
        for _ in range(CLIENTS):
            fork(client, deadline, port)
            conn, _ = listener.accept()
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            fork(server, conn)
            conn.close()


def reap():
    """Waits for every child; returns how many failed."""
    failed = 0
    try:
        while True:
            _pid, status = os.wait()
            failed += status != 0
    except ChildProcessError:
        return failed


LOADS = {"wakeup": wakeup, "sleepy": sleepy, "pingpong": pingpong}


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in LOADS:
        sys.exit(f"usage: idle_load.py {{{','.join(LOADS)}}} SECONDS")
    try:
        seconds = float(sys.argv[2])
    except ValueError:
        sys.exit(f"idle_load.py: '{sys.argv[2]}' is not a number of seconds")
    LOADS[sys.argv[1]](time.monotonic() + seconds)
    failed = reap()
    if failed:
        sys.exit(f"idle_load.py: {failed} of the {sys.argv[1]} processes failed")


if __name__ == "__main__":
    main()
