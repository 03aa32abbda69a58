#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# mrperf accepts stock perftest's command line: every flag the installed perftest tools print
# in --help (ib_{write,read,send,atomic}_{bw,lat}) is run through mrperf's parser (args_probe,
# under that tool's name) in every spelling getopt takes: --flag, --flag=V, --flag V, -fV, -f V.
# Each must be accepted, or refused with a message naming the flag; never "unknown option".
# Exit 0 pass, 1 fail, 77 skip (perftest not installed). Usage: test_perftest_flags.py PROBE
import os
import re
import subprocess
import sys

TOOLS = ["write_bw", "write_lat", "send_bw", "send_lat", "read_bw", "read_lat", "atomic_bw",
         "atomic_lat"]
# A value each flag can take (perftest's meaning); anything else gets "1".
VALUES = {"connection": "RC", "atomic_type": "FETCH_AND_ADD", "force-link": "Ethernet",
          "ib-dev": "rxe0", "size": "64", "iters": "100", "mtu": "1024", "output": "bandwidth",
          "mmap": "/tmp/x", "kek_path": "/tmp/x", "credentials_path": "/tmp/x",
          "data_enc_key_app_path": "/tmp/x", "out_json_file": "/tmp/mrperf-flags.json",
          "rate_limit_type": "SW", "rate_units": "g", "report-counters": "counters/x",
          "source_ip": "10.0.0.1", "MGID": "ff02::1", "duration": "2", "tx-depth": "16",
          "post_list": "2", "outs": "4", "inline_size": "64", "qp-timeout": "14",
          "gid-index": "1", "ib-port": "1", "vector": "0", "sl": "0", "pkey_index": "0"}
FLAG_RE = re.compile(r"^\s+(?:-([A-Za-z]), )?--([A-Za-z][A-Za-z0-9_-]*)")


def flags_of(tool):
    out = subprocess.run(["/usr/bin/ib_" + tool, "--help"], capture_output=True, text=True,
                         timeout=10)
    found = []
    for line in (out.stdout + out.stderr).splitlines():
        m = FLAG_RE.match(line)
        if m:
            found.append((m.group(1), m.group(2)))
    return found


def probe_all(probe_bin, cmdlines):
    """Runs every command line through one args_probe --batch process: [(rc, output)]."""
    text = "".join("\t".join(c) + "\n" for c in cmdlines)
    r = subprocess.run([probe_bin, "--batch"], input=text, capture_output=True, text=True,
                       timeout=300)
    lines = r.stdout.splitlines()
    if r.returncode != 0 or len(lines) != len(cmdlines):
        sys.exit(f"FAIL: args_probe --batch: rc {r.returncode}, {len(lines)} answers to "
                 f"{len(cmdlines)} lines: {r.stderr.strip()}")
    out = []
    for line in lines:
        rc, _, msg = line.partition("\t")
        out.append((int(rc), msg))
    return out


def main():
    probe_bin = sys.argv[1]
    if not all(os.access("/usr/bin/ib_" + t, os.X_OK) for t in TOOLS):
        print("SKIP: stock perftest (/usr/bin/ib_*) not installed")
        return 77
    bad = 0
    table = {}
    cases = []
    for tool in TOOLS:
        prog = "ib_" + tool
        flags = flags_of(tool)
        if len(flags) < 40:
            print(f"FAIL: only {len(flags)} flags found in {prog} --help")
            return 1
        cases += [(tool, short, long_) for short, long_ in flags if long_ != "help"]
    seen = len(cases)
    # does each flag take a value? ask the parser with none
    asks = probe_all(probe_bin, [["ib_" + t, "--" + l] for t, _, l in cases])
    runs = []
    for (tool, short, long_), (_, out) in zip(cases, asks):
        val = VALUES.get(long_, "1")
        takes = "needs a value" in out
        forms = [["--" + long_ + "=" + val], ["--" + long_, val]] if takes else [["--" + long_]]
        if short:
            forms += [["-" + short + val], ["-" + short, val]] if takes else [["-" + short]]
        runs += [(tool, short, long_, form) for form in forms]
    answers = probe_all(probe_bin, [["ib_" + r[0]] + r[3] for r in runs])
    for (tool, short, long_, form), (rc, out) in zip(runs, answers):
        prog = "ib_" + tool
        typed = form[0].split("=")[0] if form[0].startswith("--") else form[0][:2]
        ok = rc == 0 or (rc in (1, 2) and typed in out)
        if "unknown option" in out or not ok:
            print(f"FAIL: {prog} {' '.join(form)}: rc {rc}: {out}")
            bad += 1
        kind = "accepted" if rc == 0 and "ignored:" not in out else \
            "ignored" if rc == 0 else "rejected" if rc == 1 else "invalid"
        table.setdefault((short, long_), set()).add((tool, kind))
    for (short, long_), v in sorted(table.items(), key=lambda x: x[0][1].lower()):
        kinds = sorted({k for _, k in v})
        print(f"{('-' + short + ', ') if short else '    '}--{long_}: {'/'.join(kinds)}")
    print(f"{seen} flag entries over {len(TOOLS)} tools, {len(table)} distinct flags, {bad} failures")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
