"""What the guest scripts read about CPUs: cpulists and /proc/PID/stat."""


def cpulist(text):
    """The CPUs of a cpulist such as "0-3,8"."""
    out = set()
    for part in text.split(","):
        a, _, b = part.partition("-")
        out.update(range(int(a), int(b or a) + 1))
    return out


def cpu_of(pid):
    """The CPU @pid last ran on (/proc/PID/stat, field 39)."""
    with open(f"/proc/{pid}/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[36])
