"""Shared helpers for the policy VM tests: talk to the control socket and
read the pinned maps with bpftool."""

import json
import os
import socket
import subprocess
import time

PIN_DIR = os.environ.get("PIN_DIR", "/sys/fs/bpf/scx_cadence")
CTL_SOCKET = os.environ.get("CTL_SOCKET", "/run/scx_cadence/ctl.sock")


def run_delay_ms() -> float:
    """How long this thread has waited runnable for a CPU, ms (schedstat)."""
    with open("/proc/thread-self/schedstat") as f:
        return int(f.read().split()[1]) / 1e6


def request_raw(data: bytes, timeout: float = 60.0, timing: dict = None) -> dict:
    """Sends raw bytes as one request; returns the JSON reply. With @timing,
    fills it with where the request's time went, ms: connect, send (the
    request written), reply (the answer read), and waited (how much of it
    this client spent runnable without a CPU)."""
    t0, w0 = time.monotonic(), run_delay_ms()
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(timeout)
        s.connect(CTL_SOCKET)
        t1 = time.monotonic()
        try:
            s.sendall(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the server stopped reading (oversized); its reply waits
        t2 = time.monotonic()
        buf = b""
        while not buf.endswith(b"\n"):
            chunk = s.recv(65536)
            if not chunk:
                break
            buf += chunk
    if timing is not None:
        t3 = time.monotonic()
        timing.update(connect=round((t1 - t0) * 1e3, 1), send=round((t2 - t1) * 1e3, 1),
                      reply=round((t3 - t2) * 1e3, 1), waited=round(run_delay_ms() - w0, 1))
    return json.loads(buf)


def request(obj: dict, timing: dict = None) -> dict:
    return request_raw(json.dumps(obj).encode() + b"\n", timing=timing)


class _Bpftool:
    """One `bpftool batch file -` kept running: each dump is a command on its
    stdin, so a thousand reads do not cost a thousand process starts (which
    take a quarter of a second each under TCG). stdbuf makes its output
    line-buffered, so each answer arrives as soon as it is printed."""

    def __init__(self):
        self.proc = None

    def dump(self, path: str):
        if self.proc is None:
            self.proc = subprocess.Popen(
                ["stdbuf", "-oL", "bpftool", "batch", "file", "-"],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1,
            )
        self.proc.stdin.write(f"map dump pinned {path}\n")
        self.proc.stdin.flush()
        lines = []
        while True:
            line = self.proc.stdout.readline()
            if not line:
                raise RuntimeError(f"bpftool exited while dumping {path}")
            lines.append(line)
            if line.rstrip() == "]":  # the end of a BTF-formatted dump
                return json.loads("".join(lines))


_bpftool = _Bpftool()


def dump(map_name: str):
    """bpftool's BTF-formatted dump of a pinned map (a JSON list)."""
    return _bpftool.dump(f"{PIN_DIR}/{map_name}")


def bpf_policy():
    """(generation, policy fields) of the policy slot, as BPF holds it;
    padding (fields named __*) left out."""
    value = dump("policy")[0]["value"]
    fields = {k: v for k, v in value["policy"].items() if not k.startswith("__")}
    return value["generation"], fields


def cpu_generations():
    """Each CPU's policy copy generation, from the per-CPU map."""
    return {v["cpu"]: v["value"]["generation"] for v in dump("policy_cpu")[0]["values"]}
