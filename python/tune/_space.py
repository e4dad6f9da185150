"""Ray Tune's vocabulary, turned into tune's space.json (docs/space.md, docs/python.md).

Distributions, schedulers and the reporter are small value objects whose only job is to
say which JSON they stand for; build_space() assembles the whole file from tune.run's
arguments. Not for: judging values. The engine is the one judge of a space.json (ranges,
q, base, sd, scheduler options, nested and conditional spaces): nothing here checks what
it checks, so Python can reach everything it accepts and refuses with its words
(tune.run maps its FILE:LINE:COL back to the argument). What is refused here is only
what JSON cannot carry: a callable, NaN or infinity, an object, a non-string key.
"""

import difflib
import math
import numbers

__all__ = [
    "Domain", "uniform", "quniform", "loguniform", "qloguniform", "randn", "qrandn",
    "randint", "qrandint", "lograndint", "qlograndint", "choice", "grid_search",
    "sample_from", "FIFOScheduler", "ASHAScheduler", "AsyncHyperBandScheduler",
    "MedianStoppingRule", "HyperBandScheduler", "PopulationBasedTraining", "CLIReporter",
    "JupyterNotebookReporter", "to_json",
]


class Domain:
    """One distribution of the search space: kind is its space.json name, args its list,
    kept as given (the engine checks them when the file is read)."""

    def __init__(self, kind, args):
        self.kind = kind
        self.args = list(args)

    def to_json(self, where="config"):
        return {self.kind: to_json(self.args, f"{where}: {self!r}")}

    def __repr__(self):
        return f"tune.{self.kind}({', '.join(repr(a) for a in self.args)})"

    def __eq__(self, other):
        return isinstance(other, Domain) and (self.kind, self.args) == (other.kind, other.args)


def to_json(v, where):
    """v as a JSON value: Domains as their distribution objects, dicts (string keys) and
    lists as themselves, tuples as lists, numbers as int or float. Refused, with where in
    the message: what JSON cannot carry (a callable, NaN, infinity, any other object, a
    key that is not a string). Nothing else is judged: the engine does that."""
    if isinstance(v, Domain):
        return v.to_json(where)
    if v is None or isinstance(v, (bool, str)):
        return v
    if isinstance(v, numbers.Integral):
        return int(v)
    if isinstance(v, numbers.Real):
        f = float(v)
        if not math.isfinite(f):
            raise ValueError(f"{where}: {v!r} cannot be written in space.json (strict JSON has "
                             "no NaN or infinity)")
        return f
    if isinstance(v, dict):
        out = {}
        for k, x in v.items():
            if not isinstance(k, str):
                raise TypeError(f"{where}: key {k!r} is not a string; space.json keys are "
                                f"strings (write {str(k)!r} if that is what the trial reads)")
            out[k] = to_json(x, f"{where}[{k!r}]")
        return out
    if isinstance(v, (list, tuple, range)):
        return [to_json(x, f"{where}[{i}]") for i, x in enumerate(v)]
    if callable(v):
        sample_from(v)
    raise TypeError(f"{where}: {type(v).__name__} {v!r} is not a JSON value (use numbers, "
                    "strings, booleans, None, lists, dicts and tune's distributions)")


def _with_base(args, base):
    # The base never changes a log-uniform distribution (docs/space.md); Ray's default of 10
    # is left out so the generated file reads like a hand-written one.
    return args if base == 10 else args + [base]


def uniform(lower, upper):
    """Floats in [lower, upper)."""
    return Domain("uniform", [lower, upper])


def quniform(lower, upper, q):
    """The multiples of q in [lower, upper], all equally likely (docs/space.md, Quantisation)."""
    return Domain("quniform", [lower, upper, q])


def loguniform(lower, upper, base=10):
    """Floats in [lower, upper], uniform in log space."""
    return Domain("loguniform", _with_base([lower, upper], base))


def qloguniform(lower, upper, q, base=10):
    """Multiples of q in [lower, upper], log-uniform."""
    return Domain("qloguniform", _with_base([lower, upper, q], base))


def randn(mean=0.0, sd=1.0):
    """Normal floats (Ray's defaults: mean 0, sd 1)."""
    return Domain("randn", [mean, sd])


def qrandn(mean, sd, q):
    """Normal draws rounded to the nearest multiple of q."""
    return Domain("qrandn", [mean, sd, q])


def randint(lower, upper):
    """Integers in [lower, upper): upper is excluded, as in Ray Tune."""
    return Domain("randint", [lower, upper])


def qrandint(lower, upper, q=1):
    """The multiples of q in [lower, upper]: upper is included (docs/space.md)."""
    return Domain("qrandint", [lower, upper, q])


def lograndint(lower, upper, base=10):
    """Integers in [lower, upper), log-uniform."""
    return Domain("lograndint", _with_base([lower, upper], base))


def qlograndint(lower, upper, q, base=10):
    """Multiples of q in [lower, upper] inclusive, log-uniform."""
    return Domain("qlograndint", _with_base([lower, upper, q], base))


def _values(values):
    # Any sequence a Python user means as the list of values (a tuple, a range, a numpy
    # array) is that list; anything else goes as given, for the engine to judge.
    if isinstance(values, (str, bytes, dict)) or not hasattr(values, "__iter__"):
        return values
    return list(values)


class _Values(Domain):
    def __init__(self, kind, values):
        super().__init__(kind, [])
        self.args = _values(values)

    def __repr__(self):
        return f"tune.{self.kind}({self.args!r})"


def choice(categories):
    """One of the values, all equally likely; a value may hold distributions (a conditional
    space, docs/space.md "Nested spaces")."""
    return _Values("choice", categories)


def grid_search(values):
    """Every value in turn; grids multiply (docs/space.md, Grid search)."""
    return _Values("grid_search", values)


def sample_from(func):
    """Not supported: tune draws every value in C from the seed, so a Python callable cannot
    take part (and the configurations would not be reproducible from space.json)."""
    raise ValueError("tune.sample_from is not supported: tune draws every value from the seed "
                     "in the engine; use one of tune.uniform/loguniform/randint/choice/"
                     "grid_search/... (a choice of dicts with distributions inside is a "
                     "conditional space), or compute the derived value inside your trainable")


def config_to_space(config):
    """The "space" object of space.json for Ray's `config` dict, in the dict's order (the
    order fixes which random stream each parameter gets, docs/space.md Reproducibility).
    Nested dicts of distributions and choices of dicts are written as they are: the engine
    reads them as nested and conditional spaces."""
    if config is None:
        return {}
    if not isinstance(config, dict):
        raise TypeError(f"config must be a dict of parameter name to distribution or constant, "
                        f"not {type(config).__name__}")
    return to_json(config, "config")


# ---------------------------------------------------------------------------------------
# Schedulers. Arguments left at None are left out of the file, so tune's defaults apply
# (docs/space.md, "scheduler"; the same as Ray's for ASHA). The values go as given: the
# engine checks them (tune.run names the argument it refused).

class _Scheduler:
    type = None
    metric = None
    mode = None

    def __init__(self, metric=None, mode=None, **keys):
        self.metric, self.mode = metric, mode
        self.keys = {k: v for k, v in keys.items() if v is not None}

    def to_json(self):
        where = f"tune.{type(self).__name__}"
        return {"type": self.type,
                **{k: to_json(v, f"{where}({k}=...)") for k, v in self.keys.items()}}

    def __repr__(self):
        args = ", ".join(f"{k}={v!r}" for k, v in self.keys.items())
        return f"tune.{type(self).__name__}({args})"


class FIFOScheduler(_Scheduler):
    """Runs every trial to its end."""
    type = "fifo"

    def __init__(self):
        super().__init__()


class ASHAScheduler(_Scheduler):
    """Ray's AsyncHyperBandScheduler, exactly (docs/asha.md). variant is tune's own (Ray has
    no such argument): "stopping" (the default, Ray's: stop a trial below a rung's
    cutoff), "promotion" (pause it at each rung and promote the best, docs/pbt.md) or
    "eager_promotion" (the same, but a rung with fewer than reduction_factor results
    promotes its best at once). The engine checks the value."""
    type = "asha"

    def __init__(self, time_attr=None, metric=None, mode=None, max_t=None, grace_period=None,
                 reduction_factor=None, brackets=None, stop_last_trials=None, variant=None):
        super().__init__(metric, mode, time_attr=time_attr, max_t=max_t,
                         grace_period=grace_period, reduction_factor=reduction_factor,
                         brackets=brackets, stop_last_trials=stop_last_trials, variant=variant)


AsyncHyperBandScheduler = ASHAScheduler


class MedianStoppingRule(_Scheduler):
    """Ray's median stopping rule. Left-out arguments take tune's defaults
    (time_attr "training_iteration", grace_period 1), not Ray's (time_total_s, 60): tune
    counts progress in reported iterations, which every trial has. hard_stop=False pauses
    a trial below the median instead of stopping it (Ray's meaning); max_t, tune's own,
    completes a trial there."""
    type = "median"

    def __init__(self, time_attr=None, metric=None, mode=None, grace_period=None,
                 min_samples_required=None, min_time_slice=None, hard_stop=None, max_t=None):
        if min_time_slice:
            raise ValueError("tune.MedianStoppingRule: min_time_slice is not supported (tune "
                             "judges every result); leave it out")
        super().__init__(metric, mode, time_attr=time_attr, grace_period=grace_period,
                         min_samples_required=min_samples_required, hard_stop=hard_stop,
                         max_t=max_t)


class HyperBandScheduler(_Scheduler):
    """Ray's HyperBandScheduler: synchronous HyperBand, trials paused at each milestone
    until their bracket halves (docs/hyperband.md). ASHAScheduler is its asynchronous
    version."""
    type = "hyperband"

    def __init__(self, time_attr=None, metric=None, mode=None, max_t=None,
                 reduction_factor=None, stop_last_trials=None):
        super().__init__(metric, mode, time_attr=time_attr, max_t=max_t,
                         reduction_factor=reduction_factor, stop_last_trials=stop_last_trials)


class PopulationBasedTraining(_Scheduler):
    """Ray's PopulationBasedTraining (docs/pbt.md): a trial of the bottom quantile restarts
    from a top trial's checkpoint with its configuration perturbed. hyperparam_mutations
    maps a parameter of the config to a distribution (tune.loguniform(...)) or a list of
    values; left out, every distribution of the config is mutated. The trainable saves
    checkpoints in TUNE_CHECKPOINT_DIR, reports each (checkpoint=path) and restores from
    TUNE_RESUME_FROM. max_t (tune's own, optional) completes a trial there."""
    type = "pbt"

    def __init__(self, time_attr=None, metric=None, mode=None, perturbation_interval=None,
                 burn_in_period=None, hyperparam_mutations=None, quantile_fraction=None,
                 resample_probability=None, perturbation_factors=None, custom_explore_fn=None,
                 log_config=None, require_attrs=None, synch=False, keep_checkpoints=None,
                 max_t=None):
        if custom_explore_fn is not None:
            raise ValueError("tune.PopulationBasedTraining: custom_explore_fn is not supported "
                             "(tune explores in C, from the seed); use hyperparam_mutations")
        if synch:
            raise ValueError("tune.PopulationBasedTraining: synch=True is not supported: tune's "
                             "PBT is the asynchronous one (Ray's default)")
        if isinstance(hyperparam_mutations, dict):
            for k, v in hyperparam_mutations.items():
                if callable(v) and not isinstance(v, Domain):
                    raise ValueError(f"tune.PopulationBasedTraining: hyperparam_mutations[{k!r}] "
                                     "is a function, which tune cannot call (it explores in C): "
                                     "give a tune distribution (tune.loguniform(...)) or a list "
                                     "of values")
        super().__init__(metric, mode, time_attr=time_attr,
                         perturbation_interval=perturbation_interval,
                         burn_in_period=burn_in_period, quantile_fraction=quantile_fraction,
                         resample_probability=resample_probability,
                         perturbation_factors=perturbation_factors,
                         keep_checkpoints=keep_checkpoints,
                         hyperparam_mutations=hyperparam_mutations, max_t=max_t)


_SCHEDULER_NAMES = {"fifo": FIFOScheduler, "asha": ASHAScheduler, "async_hyperband": ASHAScheduler,
                    "median": MedianStoppingRule, "median_stopping_rule": MedianStoppingRule,
                    "pbt": PopulationBasedTraining, "hyperband": HyperBandScheduler}


def scheduler_of(s):
    if s is None or isinstance(s, _Scheduler):
        return s
    if isinstance(s, str) and s.lower() in _SCHEDULER_NAMES:
        return _SCHEDULER_NAMES[s.lower()]()
    raise ValueError(f"scheduler {s!r} is not supported: use tune.FIFOScheduler(), "
                     "tune.ASHAScheduler(...), tune.MedianStoppingRule(...), "
                     "tune.PopulationBasedTraining(...) or tune.HyperBandScheduler(...) (or the "
                     "strings 'fifo', 'asha', 'median', 'pbt', 'hyperband')")


class CLIReporter:
    """Which columns the live table shows (space.json's "reporter")."""

    def __init__(self, metric_columns=None, parameter_columns=None, max_report_frequency=None,
                 **unsupported):
        if unsupported:
            raise TypeError(f"tune.CLIReporter: {', '.join(sorted(unsupported))} not supported; "
                            "it takes metric_columns, parameter_columns, max_report_frequency")
        self.metric_columns = _columns("metric_columns", metric_columns)
        self.parameter_columns = _columns("parameter_columns", parameter_columns)
        self.max_report_frequency = max_report_frequency

    def to_json(self):
        out = {}
        if self.metric_columns is not None:
            out["metric_columns"] = self.metric_columns
        if self.parameter_columns is not None:
            out["parameter_columns"] = self.parameter_columns
        return out


JupyterNotebookReporter = CLIReporter


def _columns(what, cols):
    if isinstance(cols, dict):  # Ray allows {name: shown_as}; tune shows names as they are
        cols = list(cols)
    return cols


def did_you_mean(word, known):
    close = difflib.get_close_matches(word, known, n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""
