#!/usr/bin/env python3
"""The command line a systemd unit's Exec line runs, as systemd expands it
(systemd.service(5), "Command lines"): the unit's Environment= settings,
then its EnvironmentFile (which overrides them), then "${VAR}" as a word
of its own becomes exactly one argument and "$VAR" the value split at
whitespace (none if empty). Enough of systemd's rules for
docs/systemd/scx_cadence.service, whose lines use no quotes.

    unit_argv.py UNIT KEY ENVFILE [MAINPID]

KEY: ExecStart or ExecReload. ENVFILE stands for the file the unit's
EnvironmentFile= names; "-" for none (the unit's "-" prefix allows that).
Prints the arguments, each ended by a NUL, for bash's `mapfile -d ''`.
"""
import re
import sys


def unit_settings(path):
    """(key, value) of each setting line of the unit, in order."""
    out = []
    for line in open(path):
        line = line.strip()
        if not line or line[0] in "#;[":
            continue
        key, _, value = line.partition("=")
        out.append((key.strip(), value.strip()))
    return out


def env_file(path):
    """KEY=VALUE lines of an environment file; quotes around a value go."""
    env = {}
    for line in open(path):
        line = line.strip()
        if not line or line[0] in "#;":
            continue
        key, _, value = line.partition("=")
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        env[key.strip()] = value
    return env


def expand(line, env):
    argv = []
    for word in line.split():
        one = re.fullmatch(r"\$\{(\w+)\}", word)
        split = re.fullmatch(r"\$(\w+)", word)
        if one:
            argv.append(env.get(one.group(1), ""))
        elif split:
            argv.extend(env.get(split.group(1), "").split())
        elif "$" in word:
            sys.exit(f"unit_argv.py: '{word}': a variable inside a word is not handled here")
        else:
            argv.append(word)
    return argv


def main():
    unit, key, envfile = sys.argv[1:4]
    settings = unit_settings(unit)
    env = {}
    for k, v in settings:
        if k == "Environment":
            name, _, value = v.partition("=")
            env[name] = value
    if envfile != "-":
        env.update(env_file(envfile))
    if len(sys.argv) > 4:
        env["MAINPID"] = sys.argv[4]
    lines = [v for k, v in settings if k == key]
    if len(lines) != 1:
        sys.exit(f"unit_argv.py: {len(lines)} {key}= lines in {unit}")
    for arg in expand(lines[0], env):
        sys.stdout.write(arg + "\0")


main()
