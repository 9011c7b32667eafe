"""The sched_wakeup and sched_switch events of a text ftrace, as
/sys/kernel/tracing/trace prints them, for the bench's trace tools
(tasks_ahead.py, wake_waits.py)."""
import re

# "comm-pid [cpu] flags timestamp: event: fields"
EVENT = re.compile(r"\[(\d+)\]\s+\S+\s+([\d.]+): (sched_wakeup|sched_switch): (.*)$")
FIELD = re.compile(r"(\w+)=(\S+)")


def events(lines):
    """(cpu, timestamp in s, event name, {field: value}) for each event line."""
    for line in lines:
        m = EVENT.search(line)
        if m:
            yield int(m.group(1)), float(m.group(2)), m.group(3), dict(FIELD.findall(m.group(4)))
