"""Ray Tune's vocabulary, turned into tune's space.json (docs/space.md, docs/python.md).

Distributions, schedulers and the reporter are small value objects whose only job is to
say which JSON they stand for; build_space() assembles the whole file from tune.run's
arguments. Not for: running anything or checking what only the C parser can check (that
is `tune validate`, which stays the one judge of a space.json). Everything here fails
early, in Python, with a message naming the supported alternative.
"""

import difflib
import math
import numbers

__all__ = [
    "Domain", "uniform", "quniform", "loguniform", "qloguniform", "randn", "qrandn",
    "randint", "qrandint", "lograndint", "qlograndint", "choice", "grid_search",
    "sample_from", "FIFOScheduler", "ASHAScheduler", "AsyncHyperBandScheduler",
    "MedianStoppingRule", "HyperBandScheduler", "PopulationBasedTraining", "CLIReporter",
    "JupyterNotebookReporter",
]

# The keys of the space object that name a distribution (docs/space.md, "The search space").
DISTRIBUTIONS = ("uniform", "quniform", "loguniform", "qloguniform", "randn", "qrandn",
                 "randint", "qrandint", "lograndint", "qlograndint", "choice", "grid_search")


def _num(fn, what, v):
    """v as a finite real number (bool is not one), or a ValueError naming fn and the argument."""
    if isinstance(v, bool) or not isinstance(v, numbers.Real):
        raise TypeError(f"tune.{fn}: {what} must be a number, not {type(v).__name__} {v!r}")
    v = float(v) if not isinstance(v, numbers.Integral) else int(v)
    if isinstance(v, float) and not math.isfinite(v):
        raise ValueError(f"tune.{fn}: {what} must be finite, not {v!r}")
    return v


def _whole(fn, what, v):
    v = _num(fn, what, v)
    if float(v) != math.floor(float(v)):
        raise ValueError(f"tune.{fn}: {what} must be a whole number, not {v!r}")
    return int(v)


class Domain:
    """One distribution of the search space: kind is its space.json name, args its list."""

    def __init__(self, kind, args):
        self.kind = kind
        self.args = list(args)

    def to_json(self):
        return {self.kind: list(self.args)}

    def __repr__(self):
        return f"tune.{self.kind}({', '.join(repr(a) for a in self.args)})"

    def __eq__(self, other):
        return isinstance(other, Domain) and (self.kind, self.args) == (other.kind, other.args)


def _range(fn, lower, upper):
    lower, upper = _num(fn, "lower", lower), _num(fn, "upper", upper)
    if not lower < upper:
        raise ValueError(f"tune.{fn}: needs lower < upper, got lower={lower!r}, upper={upper!r}")
    return lower, upper


def _q(fn, q):
    q = _num(fn, "q", q)
    if q <= 0:
        raise ValueError(f"tune.{fn}: needs q > 0, got q={q!r}")
    return q


def _base(fn, base):
    base = _num(fn, "base", base)
    if base <= 0 or base == 1:
        raise ValueError(f"tune.{fn}: needs base > 0 and != 1, got base={base!r}")
    return base


def _with_base(args, base):
    # The base never changes a log-uniform distribution (docs/space.md); Ray's default of 10
    # is left out so the generated file reads like a hand-written one.
    return args if base == 10 else args + [base]


def uniform(lower, upper):
    """Floats in [lower, upper)."""
    return Domain("uniform", _range("uniform", lower, upper))


def quniform(lower, upper, q):
    """The multiples of q in [lower, upper], all equally likely (docs/space.md, Quantisation)."""
    lower, upper = _range("quniform", lower, upper)
    q = _q("quniform", q)
    return Domain("quniform", [lower, upper, q])


def loguniform(lower, upper, base=10):
    """Floats in [lower, upper], uniform in log space; lower > 0."""
    lower, upper = _range("loguniform", lower, upper)
    if lower <= 0:
        raise ValueError(f"tune.loguniform: needs lower > 0, got lower={lower!r}")
    return Domain("loguniform", _with_base([lower, upper], _base("loguniform", base)))


def qloguniform(lower, upper, q, base=10):
    """Multiples of q in [lower, upper], log-uniform; lower > 0."""
    lower, upper = _range("qloguniform", lower, upper)
    if lower <= 0:
        raise ValueError(f"tune.qloguniform: needs lower > 0, got lower={lower!r}")
    q = _q("qloguniform", q)
    return Domain("qloguniform", _with_base([lower, upper, q], _base("qloguniform", base)))


def randn(mean=0.0, sd=1.0):
    """Normal floats; sd > 0."""
    mean, sd = _num("randn", "mean", mean), _num("randn", "sd", sd)
    if sd <= 0:
        raise ValueError(f"tune.randn: needs sd > 0, got sd={sd!r}")
    return Domain("randn", [mean, sd])


def qrandn(mean, sd, q):
    """Normal draws rounded to the nearest multiple of q."""
    mean, sd = _num("qrandn", "mean", mean), _num("qrandn", "sd", sd)
    if sd <= 0:
        raise ValueError(f"tune.qrandn: needs sd > 0, got sd={sd!r}")
    return Domain("qrandn", [mean, sd, _q("qrandn", q)])


def _int_range(fn, lower, upper):
    lower, upper = _whole(fn, "lower", lower), _whole(fn, "upper", upper)
    if not lower < upper:
        raise ValueError(f"tune.{fn}: needs lower < upper, got lower={lower!r}, upper={upper!r}")
    return lower, upper


def randint(lower, upper):
    """Integers in [lower, upper): upper is excluded, as in Ray Tune."""
    return Domain("randint", list(_int_range("randint", lower, upper)))


def qrandint(lower, upper, q=1):
    """The multiples of q in [lower, upper]: upper is included (docs/space.md)."""
    lower, upper = _int_range("qrandint", lower, upper)
    q = _whole("qrandint", "q", q)
    if q <= 0:
        raise ValueError(f"tune.qrandint: needs q > 0, got q={q!r}")
    return Domain("qrandint", [lower, upper, q])


def lograndint(lower, upper, base=10):
    """Integers in [lower, upper), log-uniform; lower >= 1."""
    lower, upper = _int_range("lograndint", lower, upper)
    if lower < 1:
        raise ValueError(f"tune.lograndint: needs lower >= 1, got lower={lower!r}")
    return Domain("lograndint", _with_base([lower, upper], _base("lograndint", base)))


def qlograndint(lower, upper, q, base=10):
    """Multiples of q in [lower, upper] inclusive, log-uniform; lower >= 1."""
    lower, upper = _int_range("qlograndint", lower, upper)
    if lower < 1:
        raise ValueError(f"tune.qlograndint: needs lower >= 1, got lower={lower!r}")
    q = _whole("qlograndint", "q", q)
    if q <= 0:
        raise ValueError(f"tune.qlograndint: needs q > 0, got q={q!r}")
    return Domain("qlograndint", _with_base([lower, upper, q], _base("qlograndint", base)))


def _values(fn, values):
    if isinstance(values, (str, bytes, dict)) or not hasattr(values, "__iter__"):
        raise TypeError(f"tune.{fn}: give a list of values, not {type(values).__name__} {values!r}")
    values = [_constant(f"tune.{fn} value", v) for v in values]
    if not values:
        raise ValueError(f"tune.{fn}: needs at least one value")
    return values


def choice(categories):
    """One of the values, all equally likely."""
    return Domain("choice", _values("choice", categories))


def grid_search(values):
    """Every value in turn; grids multiply (docs/space.md, Grid search)."""
    return Domain("grid_search", _values("grid_search", values))


def sample_from(func):
    """Not supported: tune draws every value in C from the seed, so a Python callable cannot
    take part (and the configurations would not be reproducible from space.json)."""
    raise ValueError("tune.sample_from is not supported: tune draws every value from the seed "
                     "in the engine; use one of tune.uniform/loguniform/randint/choice/"
                     "grid_search/..., or compute the derived value inside your trainable")


def _constant(where, v):
    """A JSON value for a constant (or a value of choice/grid_search), or a TypeError."""
    if v is None or isinstance(v, (bool, str)):
        return v
    if isinstance(v, numbers.Integral):
        return int(v)
    if isinstance(v, numbers.Real):
        v = float(v)
        if not math.isfinite(v):
            raise ValueError(f"{where}: {v!r} cannot be written in space.json (strict JSON)")
        return v
    if isinstance(v, Domain):
        raise ValueError(f"{where}: a distribution inside a list is not supported "
                         f"(tune samples top-level parameters only): {v!r}")
    if isinstance(v, (list, tuple)):
        return [_constant(where, x) for x in v]
    if isinstance(v, dict):
        # Inside choice/grid_search a dict is a plain JSON value (the engine passes it on).
        return {str(k): _constant(where, x) for k, x in v.items()}
    raise TypeError(f"{where}: {type(v).__name__} {v!r} is not a JSON value "
                    "(use numbers, strings, booleans, None, lists)")


def config_to_space(config):
    """The "space" object of space.json for Ray's `config` dict, in the dict's order (the
    order fixes which random stream each parameter gets, docs/space.md Reproducibility)."""
    if config is None:
        return {}
    if not isinstance(config, dict):
        raise TypeError(f"config must be a dict of parameter name to distribution or constant, "
                        f"not {type(config).__name__}")
    space = {}
    for name, v in config.items():
        if not isinstance(name, str) or not name:
            raise TypeError(f"config: parameter names must be non-empty strings, not {name!r}")
        if isinstance(v, Domain):
            space[name] = v.to_json()
        elif isinstance(v, dict):
            # tune.grid_search in Ray returns {"grid_search": [...]}, and people write it so.
            if len(v) == 1 and next(iter(v)) in DISTRIBUTIONS:
                kind = next(iter(v))
                space[name] = {kind: _values(kind, v[kind])}
            else:
                raise ValueError(
                    f"config[{name!r}]: nested dicts are not supported (a JSON object in "
                    "space.json is a distribution); flatten it, e.g. "
                    f"{{'{name}_lr': tune.loguniform(...)}}, or give a choice of dicts: "
                    "tune.choice([{...}, {...}])")
        elif callable(v):
            sample_from(v)
        else:
            space[name] = _constant(f"config[{name!r}]", v)
    return space


# ---------------------------------------------------------------------------------------
# Schedulers. Arguments left at None are left out of the file, so tune's defaults apply
# (docs/space.md, "scheduler"; the same as Ray's for ASHA).

class _Scheduler:
    type = None
    metric = None
    mode = None

    def __init__(self, **keys):
        self.keys = {k: v for k, v in keys.items() if v is not None}

    def to_json(self):
        return {"type": self.type, **self.keys}

    def __repr__(self):
        args = ", ".join(f"{k}={v!r}" for k, v in self.keys.items())
        return f"tune.{type(self).__name__}({args})"


def _metric_mode(obj, metric, mode):
    if mode is not None and mode not in ("min", "max"):
        raise ValueError(f"mode must be 'min' or 'max', not {mode!r}")
    obj.metric, obj.mode = metric, mode


class FIFOScheduler(_Scheduler):
    """Runs every trial to its end."""
    type = "fifo"

    def __init__(self):
        super().__init__()


class ASHAScheduler(_Scheduler):
    """Ray's AsyncHyperBandScheduler, exactly (docs/asha.md)."""
    type = "asha"

    def __init__(self, time_attr=None, metric=None, mode=None, max_t=None, grace_period=None,
                 reduction_factor=None, brackets=None, stop_last_trials=None):
        _metric_mode(self, metric, mode)
        for what, v in (("max_t", max_t), ("grace_period", grace_period),
                        ("reduction_factor", reduction_factor), ("brackets", brackets)):
            if v is not None:
                _num("ASHAScheduler", what, v)
        if stop_last_trials is not None and not isinstance(stop_last_trials, bool):
            raise TypeError("tune.ASHAScheduler: stop_last_trials must be True or False")
        super().__init__(time_attr=time_attr, max_t=max_t, grace_period=grace_period,
                         reduction_factor=reduction_factor, brackets=brackets,
                         stop_last_trials=stop_last_trials)


AsyncHyperBandScheduler = ASHAScheduler


class MedianStoppingRule(_Scheduler):
    """Ray's median stopping rule. Left-out arguments take tune's defaults
    (time_attr "training_iteration", grace_period 1), not Ray's (time_total_s, 60): tune
    counts progress in reported iterations, which every trial has."""
    type = "median"

    def __init__(self, time_attr=None, metric=None, mode=None, grace_period=None,
                 min_samples_required=None, min_time_slice=None, hard_stop=None):
        _metric_mode(self, metric, mode)
        if min_time_slice:
            raise ValueError("tune.MedianStoppingRule: min_time_slice is not supported (tune "
                             "judges every result); leave it out")
        if hard_stop is False:
            raise ValueError("tune.MedianStoppingRule: hard_stop=False (pausing instead of "
                             "stopping) is not supported; leave it out to stop trials")
        super().__init__(time_attr=time_attr, grace_period=grace_period,
                         min_samples_required=min_samples_required)


class HyperBandScheduler(_Scheduler):
    """Ray's HyperBandScheduler: synchronous HyperBand, trials paused at each milestone
    until their bracket halves (docs/hyperband.md). ASHAScheduler is its asynchronous
    version."""
    type = "hyperband"

    def __init__(self, time_attr=None, metric=None, mode=None, max_t=None,
                 reduction_factor=None, stop_last_trials=None):
        _metric_mode(self, metric, mode)
        for what, v in (("max_t", max_t), ("reduction_factor", reduction_factor)):
            if v is not None:
                _num("HyperBandScheduler", what, v)
        if stop_last_trials is not None and not isinstance(stop_last_trials, bool):
            raise TypeError("tune.HyperBandScheduler: stop_last_trials must be True or False")
        super().__init__(time_attr=time_attr, max_t=max_t, reduction_factor=reduction_factor,
                         stop_last_trials=stop_last_trials)


class PopulationBasedTraining(_Scheduler):
    """Ray's PopulationBasedTraining (docs/pbt.md): a trial of the bottom quantile restarts
    from a top trial's checkpoint with its configuration perturbed. hyperparam_mutations
    maps a parameter of the config to a distribution (tune.loguniform(...)) or a list of
    values; left out, every distribution of the config is mutated. The trainable saves
    checkpoints in TUNE_CHECKPOINT_DIR, reports each (checkpoint=path) and restores from
    TUNE_RESUME_FROM."""
    type = "pbt"

    def __init__(self, time_attr=None, metric=None, mode=None, perturbation_interval=None,
                 burn_in_period=None, hyperparam_mutations=None, quantile_fraction=None,
                 resample_probability=None, perturbation_factors=None, custom_explore_fn=None,
                 log_config=None, require_attrs=None, synch=False, keep_checkpoints=None):
        _metric_mode(self, metric, mode)
        if custom_explore_fn is not None:
            raise ValueError("tune.PopulationBasedTraining: custom_explore_fn is not supported "
                             "(tune explores in C, from the seed); use hyperparam_mutations")
        if synch:
            raise ValueError("tune.PopulationBasedTraining: synch=True is not supported: tune's "
                             "PBT is the asynchronous one (Ray's default)")
        for what, v in (("perturbation_interval", perturbation_interval),
                        ("burn_in_period", burn_in_period),
                        ("quantile_fraction", quantile_fraction),
                        ("resample_probability", resample_probability)):
            if v is not None:
                _num("PopulationBasedTraining", what, v)
        factors = None
        if perturbation_factors is not None:
            factors = [_num("PopulationBasedTraining", "perturbation_factors", f)
                       for f in perturbation_factors]
        mutations = None
        if hyperparam_mutations is not None:
            if not isinstance(hyperparam_mutations, dict):
                raise TypeError("tune.PopulationBasedTraining: hyperparam_mutations must be a "
                                "dict of parameter names")
            mutations = {}
            for k, v in hyperparam_mutations.items():
                if isinstance(v, Domain):
                    mutations[k] = v.to_json()
                elif isinstance(v, (list, tuple)):
                    mutations[k] = list(v)
                else:
                    raise ValueError(f"tune.PopulationBasedTraining: hyperparam_mutations[{k!r}] "
                                     "must be a tune distribution (tune.loguniform(...)) or a "
                                     "list of values; functions are not supported")
        super().__init__(time_attr=time_attr, perturbation_interval=perturbation_interval,
                         burn_in_period=burn_in_period, quantile_fraction=quantile_fraction,
                         resample_probability=resample_probability,
                         perturbation_factors=factors, keep_checkpoints=keep_checkpoints,
                         hyperparam_mutations=mutations)


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
    if cols is None:
        return None
    if isinstance(cols, dict):  # Ray allows {name: shown_as}; tune shows names as they are
        cols = list(cols)
    if isinstance(cols, str) or not all(isinstance(c, str) for c in cols):
        raise TypeError(f"tune.CLIReporter: {what} must be a list of names")
    return list(cols)


def did_you_mean(word, known):
    close = difflib.get_close_matches(word, known, n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""
