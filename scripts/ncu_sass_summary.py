#!/usr/bin/env python3
"""Summarises an Nsight Compute source page (ncu --import R --page source --csv --print-source
sass): warp stall reasons over all sampled instructions, and executed warp instructions and
stall samples per opcode. Usage: ncu_sass_summary.py SOURCE.csv [TOP]"""
import collections
import csv
import re
import sys


def number(text):
    try:
        return float(text)
    except ValueError:
        return 0.0


def main():
    rows = list(csv.reader(open(sys.argv[1])))
    top = int(sys.argv[2]) if len(sys.argv) > 2 else 16
    head = next(i for i, r in enumerate(rows) if "Source" in r and "Instructions Executed" in r)
    cols = {c: i for i, c in enumerate(rows[head])}
    stalls = [c for c in rows[head] if c.startswith("stall_") and "Not Issued" not in c]
    reasons, executed, sampled = collections.Counter(), collections.Counter(), collections.Counter()
    total_exec = total_samples = 0.0
    for r in rows[head + 1:]:
        if len(r) < len(cols):
            continue
        m = re.match(r"(@!?U?P\w+\s+)?([A-Z0-9_]+)", r[cols["Source"]].strip())
        op = m.group(2) if m else "?"
        e = number(r[cols["Instructions Executed"]])
        s = number(r[cols["Warp Stall Sampling (All Samples)"]])
        executed[op] += e
        sampled[op] += s
        total_exec += e
        total_samples += s
        for c in stalls:
            reasons[c] += number(r[cols[c]])
    print(f"executed warp instructions {total_exec / 1e6:.2f} M, stall samples {total_samples:.0f}")
    for c, v in reasons.most_common(10):
        print(f"  {c:26s} {100 * v / max(total_samples, 1):5.1f} % of samples")
    for op, v in executed.most_common(top):
        print(f"  {op:10s} {v / 1e6:8.2f} M  {100 * v / max(total_exec, 1):5.1f} % of instructions"
              f"  {100 * sampled[op] / max(total_samples, 1):5.1f} % of samples")


if __name__ == "__main__":
    main()
