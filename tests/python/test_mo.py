"""Several objectives and constraints from Python (issue 30): metric/mode lists and
constraints= reach space.json as given, the engine's refusals come back as tune.SpaceError
naming the argument, get_best_* refuse to pick one best and name get_pareto_front(), and
the front the engine answers is, on a real run, exactly the non-dominated feasible set
computed here from the trials' last results (an oracle written independently of the
engine's rule: plain pairwise dominance over finite values)."""

import json
import math
import unittest

from helpers import Case, tune

WIDTHS = [1, 2, 4, 8, 16]
DEPTHS = [1, 2, 3]
BOUND = 16  # gpu_mem_gb = 2 * width: width 16 breaks it


def two_objectives(config):
    """Three results; the last one is the trial's point. val_loss falls with width * depth,
    latency_ms rises with it (depth 2 pays 3 ms more: some trials are dominated),
    gpu_mem_gb is 2 * width (constrained), throughput is 1000 / latency_ms. The trial
    (width 2, depth 3) reports no number for val_loss at the end (NaN: never in a front)."""
    w, d = config["width"], config["depth"]
    for i in range(1, 4):
        loss = 1.0 / (w * d) + 0.05 * d + 0.5 / i
        lat = w * d * (1 + 0.1 * i) + (3 if d == 2 else 0)
        if (w, d) == (2, 3) and i == 3:
            loss = float("nan")
        tune.report(val_loss=loss, latency_ms=lat, gpu_mem_gb=2.0 * w, throughput=1000.0 / lat)


GRID = {"width": tune.grid_search(WIDTHS), "depth": tune.grid_search(DEPTHS)}
CONSTRAINTS = {"gpu_mem_gb": {"<=": BOUND}}
OPS = {"<=": lambda v, b: v <= b, ">=": lambda v, b: v >= b, "<": lambda v, b: v < b,
       ">": lambda v, b: v > b}


def number(v):
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) \
        and math.isfinite(v) else math.nan


def oracle(trials, metrics, modes, constraints):
    """(front ids in the documented order, {id: feasible}) from the trials' last results:
    a trial is feasible when its last result meets every constraint; the front is the
    feasible trials with finite objectives that no other such trial dominates (no worse
    in every objective, better in one), ordered by the first objective in its mode, then
    id."""
    points, feasible = {}, {}
    for t in trials:
        last = t["last_result"]
        if not last:
            continue
        ok = all(not math.isnan(number(last.get(k))) and OPS[op](number(last[k]), b)
                 for k, bounds in constraints.items() for op, b in bounds.items())
        feasible[t["trial_no"]] = ok
        sign = [1 if m == "min" else -1 for m in modes]
        p = [s * number(last.get(m)) for s, m in zip(sign, metrics)]
        if ok and not any(math.isnan(v) for v in p):
            points[t["trial_no"]] = p

    def dominates(a, b):
        return all(x <= y for x, y in zip(a, b)) and any(x < y for x, y in zip(a, b))

    front = [i for i, p in points.items()
             if not any(dominates(q, p) for j, q in points.items() if j != i)]
    front.sort(key=lambda i: (points[i][0], i))
    return front, feasible


def records(df):
    """A dataframe() as a list of dicts, pandas or not."""
    return df.to_dict("records") if hasattr(df, "to_dict") else list(df)


class Front(Case):
    """A real FIFO run of 15 trials with two objectives and a constraint."""

    METRICS, MODES = ["val_loss", "latency_ms"], ["min", "min"]

    def setUp(self):
        super().setUp()
        self.a = tune.run(two_objectives, config=GRID, metric=self.METRICS, mode=self.MODES,
                          constraints=CONSTRAINTS, scheduler=tune.FIFOScheduler(), name="mo",
                          storage="tune.db", verbose=0)
        self.trials = self.a.trials()
        self.front, self.feasible = oracle(self.trials, self.METRICS, self.MODES, CONSTRAINTS)

    def test_space_json_holds_the_lists_and_constraints_as_given(self):
        with open(self.a.space_path) as f:
            s = json.load(f)
        self.assertEqual(s["metric"], self.METRICS)
        self.assertEqual(s["mode"], self.MODES)
        self.assertEqual(s["constraints"], CONSTRAINTS)
        self.assertEqual((self.a.metrics, self.a.modes), (self.METRICS, self.MODES))

    def test_front_is_the_nondominated_feasible_set(self):
        # The case is one where a wrong rule shows: an infeasible trial that would be in the
        # front, a feasible dominated one, and a NaN objective.
        self.assertEqual(len(self.trials), 15)
        self.assertGreaterEqual(len(self.front), 3)
        self.assertIn(False, self.feasible.values())
        unconstrained, _ = oracle(self.trials, self.METRICS, self.MODES, {})
        self.assertNotEqual(unconstrained, self.front)
        self.assertLess(len(self.front), sum(self.feasible.values()) - 1)

        got = self.a.get_pareto_front()
        self.assertEqual([t["trial_no"] for t in got], self.front)
        for t in got:
            self.assertEqual(t["violation"], 0)
            for m in self.METRICS:
                self.assertAlmostEqual(t["values"][m], t["last_result"][m])
        # the Tuner's ResultGrid answers the same Results
        grid = tune.ResultGrid(self.a)
        self.assertEqual([r.path for r in grid.get_pareto_front()],
                         [t["trial_dir"] for t in got])
        self.assertEqual([r.config for r in grid.get_pareto_front()], [t["config"] for t in got])

    def test_dataframe_marks_the_front_and_the_feasible(self):
        rows = records(self.a.dataframe())
        self.assertEqual(len(rows), 15)
        by = {r["trial_no"]: r for r in rows}
        self.assertEqual(sorted(i for i, r in by.items() if r["pareto"]), sorted(self.front))
        self.assertEqual({i: bool(by[i]["feasible"]) for i in self.feasible}, self.feasible)
        # ResultGrid.get_dataframe is the same frame
        rows2 = records(tune.ResultGrid(self.a).get_dataframe())
        self.assertEqual([bool(r["pareto"]) for r in rows2], [bool(r["pareto"]) for r in rows])

    def test_a_single_best_raises_naming_get_pareto_front(self):
        grid = tune.ResultGrid(self.a)
        asks = {"get_best_trial()": lambda: self.a.get_best_trial(),
                "best_trial": lambda: self.a.best_trial,
                "best_config": lambda: self.a.best_config,
                "best_result": lambda: self.a.best_result,
                "best_logdir": lambda: self.a.best_logdir,
                "best_checkpoint": lambda: self.a.best_checkpoint,
                "get_best_config()": lambda: self.a.get_best_config(),
                "get_best_trial(mode='min')": lambda: self.a.get_best_trial(mode="min"),
                "get_best_trial(metric=[...])": lambda: self.a.get_best_trial(self.METRICS,
                                                                              self.MODES),
                "ResultGrid.get_best_result()": lambda: grid.get_best_result()}
        for what, ask in asks.items():
            with self.subTest(what=what), self.assertRaises(ValueError) as cm:
                ask()
            msg = str(cm.exception)
            self.assertIn("no single best trial with several objectives", msg)
            self.assertIn("get_pareto_front()", msg)
            self.assertIn("val_loss min, latency_ms min", msg)

    def test_one_metric_named_is_ranked_by_that_metric_alone(self):
        # As with one objective: by the last result, ties to the lower trial, constraints
        # not consulted (the best val_loss alone is width 16's, which breaks the bound).
        for metric, mode in (("val_loss", "min"), ("latency_ms", "min"), ("latency_ms", None),
                             ("throughput", "max"), ("gpu_mem_gb", "max")):
            with self.subTest(metric=metric, mode=mode):
                sign = -1 if mode == "max" else 1
                vals = [(sign * number(t["last_result"].get(metric)), t["trial_no"])
                        for t in self.trials
                        if not math.isnan(number(t["last_result"].get(metric)))]
                want = min(vals)[1]
                self.assertEqual(self.a.get_best_trial(metric, mode)["trial_no"], want)
                self.assertEqual(tune.ResultGrid(self.a).get_best_result(metric, mode).path,
                                 self.trials[want]["trial_dir"])
        with self.assertRaisesRegex(ValueError, "pass mode='min' or mode='max' for metric "
                                                "'throughput'"):
            self.a.get_best_trial("throughput")


class NoneFeasible(Case):
    def test_no_feasible_trial_is_said_not_guessed(self):
        a = tune.run(two_objectives, config={"width": tune.grid_search([1, 2]), "depth": 1},
                     metric=["val_loss", "latency_ms"], mode=["min", "min"],
                     constraints={"gpu_mem_gb": {"<": 1}}, name="none", storage="tune.db",
                     verbose=0)
        with self.assertRaises(tune.TuneError) as cm:
            a.get_pareto_front()
        self.assertIn("gpu_mem_gb", str(cm.exception))  # the constraint closest to being met
        self.assertEqual(cm.exception.exit_code, 1)
        rows = records(a.dataframe())
        self.assertEqual([(bool(r["pareto"]), bool(r["feasible"])) for r in rows],
                         [(False, False)] * 2)


class Asha(Case):
    def test_asha_front_is_the_nondominated_feasible_set(self):
        metrics, modes = ["val_loss", "throughput"], ["min", "max"]
        a = tune.run(two_objectives, config=GRID, metric=metrics, mode=modes,
                     constraints=CONSTRAINTS, max_concurrent_trials=2,
                     scheduler=tune.ASHAScheduler(max_t=3, grace_period=1, reduction_factor=3),
                     name="asha", storage="tune.db", verbose=0)
        trials = a.trials()
        self.assertTrue(any(t["early_stopped"] for t in trials))  # MO-ASHA stopped some
        front, feasible = oracle(trials, metrics, modes, CONSTRAINTS)
        self.assertGreaterEqual(len(front), 2)
        self.assertEqual([t["trial_no"] for t in a.get_pareto_front()], front)
        rows = records(a.dataframe())
        self.assertEqual(sorted(r["trial_no"] for r in rows if r["pareto"]), sorted(front))


class Searcher(Case):
    def test_optuna_search_takes_the_lists_as_rays_does(self):
        # Ray's OptunaSearch(metric=[...], mode=[...]) is its multi-objective spelling; here
        # it is the engine's TPE ("tpe", preset "optuna"), which ranks several objectives.
        from tune.search.optuna import OptunaSearch
        metrics, modes = ["val_loss", "latency_ms"], ["min", "min"]
        a = tune.run(two_objectives, config={"width": tune.choice(WIDTHS),
                                             "depth": tune.choice(DEPTHS)},
                     search_alg=OptunaSearch(metric=metrics, mode=tuple(modes), seed=3),
                     constraints=CONSTRAINTS, num_samples=8, max_concurrent_trials=2,
                     name="tpe", storage="tune.db", verbose=0)
        with open(a.space_path) as f:
            s = json.load(f)
        self.assertEqual((s["metric"], s["mode"], s["search"]),
                         (metrics, modes, {"type": "tpe", "preset": "optuna"}))
        front, _ = oracle(a.trials(), metrics, modes, CONSTRAINTS)
        self.assertEqual([t["trial_no"] for t in a.get_pareto_front()], front)


class Translation(Case):
    """What the engine refuses comes back as tune.SpaceError naming the Python argument;
    the Optuna spellings are refused with tune's."""

    def refusal(self, **kw):
        kw.setdefault("config", {"width": 1, "depth": 1})
        with self.assertRaises(tune.SpaceError) as cm:
            tune.run(two_objectives, name="bad", storage="tune.db", verbose=0, **kw)
        e = cm.exception
        self.assertIsInstance(e, ValueError)
        self.assertIsInstance(e, tune.TuneError)
        self.assertEqual(e.exit_code, 2)
        return str(e)

    def test_lengths_that_differ(self):
        # the argument named, the engine's words with its remedy said as the argument, then
        # the engine's own line in the generated file
        msg = self.refusal(metric=["val_loss", "latency_ms"], mode=["min"])
        first, second = msg.split("\n")
        self.assertEqual(first, "mode=['min']: \"mode\" has 1 entry for 2 metrics: write "
                                "mode=['min', 'min']")
        self.assertRegex(second, r'bad\.space\.json:\d+:\d+: "mode" has 1 entry for 2 metrics: '
                                 r'write "mode": \["min", "min"\]')
        msg = self.refusal(metric=["val_loss"], mode=["min", "max"])
        self.assertTrue(msg.startswith("mode=['min', 'max']: \"mode\" has 2 entries for 1 "
                                       "metric"), msg)
        msg = self.refusal(metric=["val_loss", "latency_ms"])  # no mode: named at the metric
        self.assertTrue(msg.startswith("metric=['val_loss', 'latency_ms']: \"mode\" is missing "
                                       "for 2 metrics: add mode=['min', 'min']"), msg)

    def test_a_scheduler_that_takes_one_objective(self):
        msg = self.refusal(metric=["val_loss", "latency_ms"], mode=["min", "min"],
                           scheduler=tune.MedianStoppingRule())
        self.assertTrue(msg.startswith("scheduler=tune.MedianStoppingRule(): the \"median\" "
                                       "scheduler takes one objective"), msg)

    def test_a_constraint_on_a_key_never_reported_then_the_fix(self):
        # Not a space.json refusal: the first result shows the typo. The message names the
        # argument to fix, and the fixed script run again replaces the stopped experiment.
        kw = dict(config={"width": 1, "depth": 1}, metric=["val_loss", "latency_ms"],
                  mode=["min", "min"], name="typo", storage="tune.db", verbose=0)
        with self.assertRaises(tune.TuneError) as cm:
            tune.run(two_objectives, constraints={"gpu_mem": {"<=": 16}}, **kw)
        msg = str(cm.exception)
        self.assertNotIsInstance(cm.exception, tune.SpaceError)
        self.assertIn('reports no "gpu_mem", a key of "constraints" (did you mean '
                      '"gpu_mem_gb"?)', msg)
        self.assertIn("Fix constraints= or the name the trainable reports", msg)
        a = tune.run(two_objectives, constraints=CONSTRAINTS, **kw)
        self.assertEqual(a.name, "typo")
        self.assertEqual([t["status"] for t in a.trials()], ["TERMINATED"])
        self.assertEqual(self.sql("SELECT count(*) FROM experiments"), [(1,)])

    def test_a_bad_constraint_operator(self):
        msg = self.refusal(metric=["val_loss", "latency_ms"], mode=["min", "min"],
                           constraints={"gpu_mem_gb": {"=<": 16}})
        self.assertTrue(msg.startswith("constraints['gpu_mem_gb']"), msg)
        self.assertIn("'<='", msg.replace('"', "'"))  # the engine's did-you-mean

    def test_tuner_names_the_same_argument(self):
        tuner = tune.Tuner(two_objectives, param_space={"width": 1, "depth": 1},
                           tune_config=tune.TuneConfig(metric=["val_loss", "latency_ms"],
                                                       mode=["min", "min"],
                                                       constraints={"gpu_mem_gb": {"=<": 16}}),
                           run_config=tune.RunConfig(name="bad", storage="tune.db", verbose=0))
        with self.assertRaises(tune.SpaceError) as cm:
            tuner.fit()
        self.assertTrue(str(cm.exception).startswith("constraints['gpu_mem_gb']"),
                        str(cm.exception))

    def test_scheduler_list_metric_agrees_with_run(self):
        s = tune.build_space(two_objectives, GRID, name="m", mode=["min", "min"],
                             scheduler=tune.ASHAScheduler(metric=("val_loss", "latency_ms")))
        self.assertEqual(s["metric"], ["val_loss", "latency_ms"])
        with self.assertRaisesRegex(ValueError, "but the scheduler says"):
            tune.build_space(two_objectives, GRID, name="m", metric=["val_loss", "x"],
                             scheduler=tune.ASHAScheduler(metric=["val_loss", "latency_ms"]))

    def test_optuna_spellings_say_tunes(self):
        with self.assertRaisesRegex(TypeError, r"constraints=\{'gpu_mem_gb': \{'<=': 16\}\}"):
            tune.run(two_objectives, constraints_func=lambda t: [0.0])
        with self.assertRaisesRegex(TypeError, r"mode=\['min', 'min'\]"):
            tune.run(two_objectives, directions=["minimize", "minimize"])
        with self.assertRaisesRegex(TypeError, "constraints_func"):
            tune.TuneConfig(constraints_func=lambda t: [0.0])


class OneObjective(Case):
    def run_one(self, **kw):
        return tune.run(two_objectives, config={"width": tune.grid_search([1, 2, 4]),
                                                "depth": 1},
                        metric="val_loss", mode="min", name="one", storage="tune.db",
                        verbose=0, **kw)

    def test_unchanged(self):
        a = self.run_one()
        self.assertEqual((a.metrics, a.modes, a.constraints), (["val_loss"], ["min"], {}))
        self.assertEqual(a.best_config, {"width": 4, "depth": 1})
        self.assertEqual([t["trial_no"] for t in a.get_pareto_front()], [2])
        self.assertNotIn("pareto", records(a.dataframe())[0])

    def test_with_constraints_the_best_is_the_engines_best_feasible(self):
        # val_loss falls with the width, gpu_mem_gb = 2 * width: width 4 is best by the
        # metric alone and breaks the bound, so `tune best` (and Python) answers width 2.
        a = self.run_one(constraints={"gpu_mem_gb": {"<=": 5}})
        trials = a.trials()
        front, feasible = oracle(trials, ["val_loss"], ["min"], a.constraints)
        self.assertEqual(front, [1])
        self.assertEqual(a.best_config, {"width": 2, "depth": 1})
        self.assertEqual(a.get_best_trial()["trial_no"], 1)
        self.assertEqual(tune.ResultGrid(a).get_best_result().config, {"width": 2, "depth": 1})
        self.assertEqual([t["trial_no"] for t in a.get_pareto_front()], front)
        rows = records(a.dataframe())
        self.assertEqual([bool(r["feasible"]) for r in rows], [feasible[i] for i in range(3)])
        self.assertEqual([bool(r["pareto"]) for r in rows], [False, True, False])
        # another metric, named: by it alone, as always
        self.assertEqual(a.get_best_trial("gpu_mem_gb", "max")["trial_no"], 2)
        with self.assertRaisesRegex(ValueError, "scope='all' cannot be used with the "
                                                "constraints"):
            a.get_best_trial(scope="all")


if __name__ == "__main__":
    unittest.main()
