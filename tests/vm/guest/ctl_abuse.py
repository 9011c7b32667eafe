"""Malformed and hostile control requests: each must get an error reply,
the server must keep serving, and the BPF policy must not change.

    ctl_abuse.py
"""

import socket
import sys
import time

from policy_maps import CTL_SOCKET, bpf_policy, request, request_raw

before = bpf_policy()
cases = {
    "oversized": (b"{" + b" " * (1 << 20) + b"}\n", "exceeds 65536 bytes"),
    "bad utf-8": (b'{"cmd":"get\xff\xfe"}\n', "not valid UTF-8"),
    "unknown command": (b'{"cmd":"reboot"}\n', "unknown command `reboot`"),
    "not json": (b"switch powersave\n", "not JSON"),
    "missing field": (b'{"cmd":"switch"}\n', "missing field `policy`"),
    "extra field": (b'{"cmd":"get","evil":1}\n', "unknown field `evil`"),
    "wrong type": (b'{"cmd":"set","assignments":"slice.max_us=1"}\n', "bad `set` request"),
    "empty": (b"\n", "not JSON"),
    "bad policy text": (b'{"cmd":"switch","policy":"/x.toml","text":"[slice]\\nmax_us = -1\\n"}\n',
                        "slice.max_us = -1 is out of range"),
    "unknown key": (b'{"cmd":"set","assignments":["slice.turbo=1"]}\n', "unknown key `slice.turbo`"),
}
failures = 0
for name, (data, want) in cases.items():
    try:
        reply = request_raw(data)
    except Exception as e:  # no reply at all is a failure too
        reply = {"error": None, "exception": repr(e)}
    err = reply.get("error") or ""
    ok = want in err
    failures += not ok
    print(f"{'ok  ' if ok else 'FAIL'} {name}: {err or reply}")

# A client that connects and says nothing is cut off after the read timeout,
# with an error, and does not stop the server for good.
with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
    s.settimeout(30)
    s.connect(CTL_SOCKET)
    t0 = time.monotonic()
    silent = s.recv(4096).decode()
    print(f"silent client answered after {time.monotonic() - t0:.1f} s: {silent.strip()}")
    failures += '"error"' not in silent or "no request within 2 s" not in silent

after_get = request({"cmd": "get"})
if after_get.get("error") is not None:
    failures += 1
    print(f"FAIL the server stopped serving: {after_get}")
after = bpf_policy()
if after != before:
    failures += 1
    print(f"FAIL the BPF policy changed: {before} -> {after}")
print(f"{len(cases) + 1} bad requests, {failures} failed; generation still {after[0]}")
sys.exit(1 if failures else 0)
