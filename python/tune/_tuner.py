"""Ray Tune 2's object API (Tuner, TuneConfig, RunConfig, FailureConfig, ResultGrid) as a
thin spelling of tune.run: each class only collects arguments, fit() calls tune.run, and
ResultGrid reads the database through ExperimentAnalysis. Not for: anything tune.run does
not do; arguments without a tune.run counterpart are refused as tune.run refuses them.
"""

import math

from . import _run
from ._results import _frame

__all__ = ["Tuner", "TuneConfig", "RunConfig", "FailureConfig", "CheckpointConfig",
           "ResultGrid", "Result", "with_resources"]


class _Args:
    """Keeps the arguments given (None for the ones left out) and refuses unknown ones."""
    known = ()

    def __init__(self, **kw):
        for k in kw:
            if k not in self.known:
                hint = _run._RAY_ONLY.get(k)
                raise TypeError(f"tune.{type(self).__name__}: {k!r} is not supported"
                                + (f": {hint}" if hint else "; it takes "
                                   + ", ".join(self.known)))
        self.kw = {k: v for k, v in kw.items() if v is not None}


class TuneConfig(_Args):
    known = ("metric", "mode", "search_alg", "scheduler", "num_samples",
             "max_concurrent_trials", "time_budget_s", "seed", "points_to_evaluate")


class FailureConfig(_Args):
    known = ("max_failures", "fail_fast")


class RunConfig(_Args):
    known = ("name", "storage", "stop", "failure_config", "progress_reporter", "verbose",
             "trial_time_limit_s", "stop_experiment_on_target", "allow_missing_metric",
             "storage_path", "checkpoint_config", "callbacks", "sync_config", "log_to_file")

    def __init__(self, **kw):
        super().__init__(**kw)
        for k in ("storage_path", "checkpoint_config", "callbacks", "sync_config"):
            if k in self.kw:
                raise TypeError(f"tune.RunConfig: {k!r} is not supported: {_run._RAY_ONLY[k]}")
        self.kw.pop("log_to_file", None)  # every trial's output is in its folder anyway


class CheckpointConfig:
    def __init__(self, *a, **k):
        raise TypeError(f"tune.CheckpointConfig is not supported: {_run._RAY_ONLY['checkpoint_config']}")


class _WithResources:
    def __init__(self, trainable, resources):
        self.trainable, self.resources = trainable, resources


def with_resources(trainable, resources):
    """Ray's tune.with_resources: the trainable with its resources_per_trial."""
    return _WithResources(trainable, resources)


class Tuner:
    """Tuner(train, param_space={...}, tune_config=TuneConfig(...), run_config=RunConfig(...))."""

    def __init__(self, trainable, *, param_space=None, tune_config=None, run_config=None):
        self.kwargs = {}
        if isinstance(trainable, _WithResources):
            self.kwargs["resources_per_trial"] = trainable.resources
            trainable = trainable.trainable
        self.trainable = trainable
        self.param_space = param_space
        self.kwargs.update((tune_config or TuneConfig()).kw)
        run = dict((run_config or RunConfig()).kw)
        failure = run.pop("failure_config", None)
        if failure is not None:
            self.kwargs.update(failure.kw)
        self.kwargs.update(run)

    def fit(self, **options):
        """Runs the experiment (tune.run) and returns its ResultGrid. options: tune.run's
        options that Ray has no place for (gpus, cpus, resume, restart, ...)."""
        kw = dict(self.kwargs, raise_on_failed_trial=False, **options)
        return ResultGrid(_run.run(self.trainable, self.param_space, **kw))

    @classmethod
    def restore(cls, path, trainable=None, **k):
        raise TypeError("tune.Tuner.restore is not supported: tune.resume(name, storage=...) "
                        "continues an interrupted experiment")


class Result:
    """One trial: config, metrics (its last result), path (its folder), error."""

    def __init__(self, analysis, trial):
        self._analysis, self._trial = analysis, trial
        self.config = trial["config"]
        self.metrics = trial["last_result"] or {}
        self.path = trial["trial_dir"]
        self.error = trial["error"] if trial["status"] == "ERROR" else None

    def _rows(self):
        return self._analysis.results(trial=self._trial["trial_no"])

    @property
    def metrics_dataframe(self):
        """Every result of the trial, as a DataFrame when pandas is installed."""
        return _frame(self._rows())

    def __repr__(self):
        return f"Result({self._trial['trial']}, metrics={self.metrics!r}, config={self.config!r})"


class ResultGrid:
    """What Tuner.fit returns: one Result per trial, get_best_result(), get_dataframe()."""

    def __init__(self, analysis):
        self.experiment = analysis
        self._results = [Result(analysis, t) for t in analysis.trials()]

    def __len__(self):
        return len(self._results)

    def __getitem__(self, i):
        return self._results[i]

    @property
    def errors(self):
        return [r.error for r in self._results if r.error]

    @property
    def num_errors(self):
        return len(self.errors)

    def get_dataframe(self):
        return self.experiment.dataframe()

    def get_best_result(self, metric=None, mode=None, scope="last"):
        """The best trial by metric and mode (the experiment's when left out), judged by its
        last result (scope "last") or its best (scope "all"), as Ray's."""
        ex = self.experiment
        if (metric in (None, ex.metric)) and (mode in (None, ex.mode)):
            best = ex.best_trial(scope=scope)
            return Result(ex, best) if best else None
        metric, mode = metric or ex.metric, mode or ex.mode
        if mode not in ("min", "max"):
            raise ValueError(f"mode must be 'min' or 'max', not {mode!r}")
        sign = 1 if mode == "min" else -1
        best = None
        for r in self._results:
            rows = [r.metrics] if scope == "last" else r._rows()
            vals = [row.get(metric) for row in rows]
            vals = [v for v in vals if isinstance(v, (int, float)) and not math.isnan(v)]
            if vals:
                v = min(sign * x for x in vals)
                if best is None or v < best[0]:
                    best = (v, r)
        return best[1] if best else None
