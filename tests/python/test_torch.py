"""A PyTorch function trainable end to end: two learning rates of a one-layer model,
torch tensors reported as numbers, the better rate found."""

import unittest

from helpers import Case, tune
import trainables


class Torch(Case):
    def test_torch_function_trainable(self):
        try:
            import torch  # noqa: F401
        except ImportError:
            self.skipTest("PyTorch is not installed (Debian: python3-torch)")
        a = tune.run(trainables.torch_regression,
                     config={"lr": tune.grid_search([0.001, 0.1]), "epochs": 5},
                     metric="loss", mode="min", name="torch", storage="tune.db",
                     max_concurrent_trials=2, verbose=0)
        trials = a.trials()
        self.assertEqual([t["status"] for t in trials], ["TERMINATED", "TERMINATED"])
        self.assertEqual([t["iterations"] for t in trials], [5, 5])
        self.assertEqual(a.best_config["lr"], 0.1)
        losses = [r["loss"] for r in a.results(trial=1)]
        self.assertIsInstance(losses[0], float)  # a tensor went through tune.report
        self.assertLess(losses[-1], losses[0] / 10)
        self.assertGreater(a.best_result["weight"], 2.5)  # close to the true slope 3


if __name__ == "__main__":
    unittest.main()
