"""A command trainable for the tests: `python3 cmd_trial.py --x X [--sleep S]`, reporting
loss = x / i for i = 1..5 with the standard-library helper python/tune_report.py."""

import argparse
import time

from tune_report import report

ap = argparse.ArgumentParser()
ap.add_argument("--x", type=float, required=True)
ap.add_argument("--sleep", type=float, default=0)
a = ap.parse_args()
for i in range(1, 6):
    time.sleep(a.sleep)
    report(training_iteration=i, loss=a.x / i)
