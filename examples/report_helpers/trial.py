#!/usr/bin/python3
"""A minimal Python trial that reports to tune with python/tune_report.py: a made-up
learning curve whose floor depends on --lr (best near 0.01), one result per iteration.
Not for: anything but showing the helper (tests/test_report.c runs it under tune)."""
import argparse
import math
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.realpath(__file__)), "..", "..", "python"))
from tune_report import report  # noqa: E402

p = argparse.ArgumentParser()
p.add_argument("--lr", type=float, default=0.01)
p.add_argument("--iters", type=int, default=10)
args = p.parse_args()
for t in range(1, args.iters + 1):
    loss = 0.1 + 0.3 * abs(math.log10(args.lr / 0.01)) + 1 / math.sqrt(t)
    report(training_iteration=t, loss=loss, accuracy=float("nan") if t == 1 else 1 - loss / 3)
