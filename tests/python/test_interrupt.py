"""The randomized interruption test under ctest (interrupt.py): for each scheduler, three
seeded sequences of interruptions (Ctrl-C, Ctrl-C twice, SIGTERM, kill -9, each followed by
a resume with a random number of CPUs) and a final resume, then every figure that counts
a failure must be 0: no iteration doubled or missing, no wrong value, no restart from
scratch when a checkpoint existed, every trial finished, no process left, nothing outside
the run's folders changed; with several objectives (mo_*), the decisions, the searcher's
choices and `tune best --json`'s front are the uninterrupted run's. The long run (hundreds of sequences) is interrupt.py itself
(docs/durability.md)."""

import os
import shutil
import tempfile
import unittest

import interrupt

HERE = os.path.dirname(os.path.abspath(__file__))
BUILD = os.environ.get("TUNE_BINARY_DIR") or os.path.join(HERE, "..", "..", "build")
SEEDS = 3


class Interrupt(unittest.TestCase):
    def sequences(self, sched):
        if not os.access(os.path.join(BUILD, "tests", "progs", "resumable_trial"), os.X_OK):
            self.skipTest("no resumable_trial in this build")
        root = tempfile.mkdtemp(prefix=f"tune-interrupt-{sched}-")
        try:
            total = interrupt.run(BUILD, [sched], SEEDS, 1, root)
            for k in interrupt.BAD:
                self.assertEqual(total[k], 0, f"{k}: {total} (kept in {root})")
            self.assertGreater(total["iterations"], 0)
        except AssertionError:
            raise
        else:
            shutil.rmtree(root, ignore_errors=True)

    def test_fifo(self):
        self.sequences("fifo")

    def test_asha(self):
        self.sequences("asha")

    def test_asha_promotion(self):
        self.sequences("asha_promotion")

    def test_asha_eager(self):
        self.sequences("asha_eager")

    def test_median(self):
        self.sequences("median")

    def test_median_soft(self):
        self.sequences("median_soft")

    def test_pbt(self):
        self.sequences("pbt")

    def test_tpe(self):
        self.sequences("tpe")

    def test_hyperband(self):
        self.sequences("hyperband")

    # several objectives and constraints: also the uninterrupted run's decisions and front
    def test_mo_asha(self):
        self.sequences("mo_asha")

    def test_mo_asha_promotion(self):
        self.sequences("mo_asha_promotion")

    def test_mo_asha_eager(self):
        self.sequences("mo_asha_eager")

    def test_mo_hyperband(self):
        self.sequences("mo_hyperband")

    def test_mo_tpe(self):
        self.sequences("mo_tpe")


if __name__ == "__main__":
    unittest.main()
