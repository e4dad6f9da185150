"""Ray Tune 2's object API (Tuner, TuneConfig, RunConfig, FailureConfig, ResultGrid) as a
thin spelling of tune.run: each class only collects arguments, fit() calls tune.run, and
ResultGrid reads the database through ExperimentAnalysis. Not for: anything tune.run does
not do; arguments without a tune.run counterpart are refused as tune.run refuses them.
"""

import os

from . import _ray, _run
from ._results import _frame

__all__ = ["Tuner", "TuneConfig", "RunConfig", "FailureConfig", "CheckpointConfig",
           "ResultGrid", "Result", "with_resources"]


class _Args:
    """Keeps the arguments given (None for the ones left out) and refuses unknown ones."""
    known = ()

    def __init__(self, **kw):
        for k in kw:
            if k not in self.known:
                hint = _run._RAY_ONLY.get(k) or _run._OPTUNA_ONLY.get(k)
                raise TypeError(f"tune.{type(self).__name__}: {k!r} is not supported"
                                + (f": {hint}" if hint else "; it takes "
                                   + ", ".join(self.known)))
        self.kw = {k: v for k, v in kw.items() if v is not None}


class TuneConfig(_Args):
    """metric and mode may be lists (several objectives), with constraints (tune's own):
    TuneConfig(metric=["val_loss", "latency_ms"], mode=["min", "min"],
    constraints={"gpu_mem_gb": {"<=": 16}})."""
    known = ("metric", "mode", "constraints", "search_alg", "scheduler", "num_samples",
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
        return ResultGrid(_ray.run(self.trainable, self.param_space, **kw))

    @classmethod
    def restore(cls, path, trainable=None, **k):
        raise TypeError("tune.Tuner.restore is not supported: tune.resume(name, storage=...) "
                        "continues an interrupted experiment")


class Result:
    """One trial: config, metrics (its last result), path (its folder), error, checkpoint
    (its latest checkpoint still on disk, a tune.Checkpoint, or None), best_checkpoints."""

    def __init__(self, analysis, trial):
        self._analysis, self._trial = analysis, trial
        self.config = trial["config"]
        self.metrics = trial["last_result"] or {}
        self.path = trial["trial_dir"]
        self.error = trial["error"] if trial["status"] == "ERROR" else None

    def _rows(self):
        return self._analysis.results(trial=self._trial["trial_no"])

    @property
    def checkpoint(self):
        """The trial's latest reported checkpoint that is still on disk, or None."""
        return self._analysis.get_last_checkpoint(self._trial)

    @property
    def best_checkpoints(self):
        """[(tune.Checkpoint, the result that reported it)] for the checkpoints on disk,
        oldest first (tune keeps the newest keep_checkpoints of each trial)."""
        return self._analysis.checkpoints(self._trial)

    @property
    def metrics_dataframe(self):
        """Every result of the trial, as a DataFrame when pandas is installed."""
        return _frame(self._rows())

    def __repr__(self):
        return f"Result({self._trial['trial']}, metrics={self.metrics!r}, config={self.config!r})"


class ResultGrid:
    """What Tuner.fit returns: one Result per trial, get_best_result(), get_dataframe(),
    and with several objectives get_pareto_front()."""

    def __init__(self, analysis):
        self.experiment = analysis
        self._results = [Result(analysis, t) for t in analysis.trials()]

    def __len__(self):
        return len(self._results)

    def __getitem__(self, i):
        return self._results[i]

    def __iter__(self):
        return iter(self._results)

    @property
    def errors(self):
        return [r.error for r in self._results if r.error]

    @property
    def num_errors(self):
        return len(self.errors)

    @property
    def num_terminated(self):
        return sum(1 for r in self._results if r._trial["status"] == "TERMINATED")

    @property
    def experiment_path(self):
        """The experiment's folder of trial folders (tune_results/NAME)."""
        dirs = [r.path for r in self._results if r.path]
        return os.path.dirname(dirs[0]) if dirs else None

    def get_dataframe(self, filter_metric=None, filter_mode=None):
        """One row per trial: the last result (with filter_metric and filter_mode: each
        trial's best result by them), as Ray's."""
        return self.experiment.dataframe(filter_metric, filter_mode)

    def get_best_result(self, metric=None, mode=None, scope="last", filter_nan_and_inf=True):
        """The best trial's Result by metric and mode (the experiment's when left out),
        judged by its last result (scope "last"), its best ("all") or an average ("avg",
        "last-5-avg", "last-10-avg"), as Ray's. Raises, as Ray does, when there is no
        metric to go by, no trial reported it, or none has a value yet
        (ExperimentAnalysis.get_best_trial); with several objectives and no metric=, a
        ValueError naming get_pareto_front()."""
        return Result(self.experiment, self.experiment.get_best_trial(
            metric, mode, scope, filter_nan_and_inf))

    def get_pareto_front(self):
        """With several objectives: the Results of the Pareto front, in the engine's order
        (ExperimentAnalysis.get_pareto_front, `tune best`)."""
        return [Result(self.experiment, t) for t in self.experiment.get_pareto_front()]
