"""Read-only readers of a tune database: tune.Experiment, tune.experiments, the analysis
(Ray's ExperimentAnalysis names: best_trial, best_config, get_best_trial, best_checkpoint,
trial_dataframes, ...), and with several objectives the Pareto front (get_pareto_front).

Every query goes through the documented views (docs/schema.md: trial_summary,
experiment_summary, results_current) on a connection opened read-only
(`file:PATH?mode=ro`), fresh for each call, so a notebook can read an experiment while
`tune` writes it (WAL: readers never block the writer). The Pareto front and the trials'
pareto/feasible marks are the engine's answer (`tune best --json`, `tune trials --json`),
never ranked here. Not for: writing anything, or ranking several objectives.
"""

import contextlib
import json
import math
import os
import sqlite3
import subprocess
import urllib.parse

__all__ = ["TuneError", "Experiment", "ExperimentAnalysis", "experiments"]


class TuneError(Exception):
    """tune failed: the message is tune's own. exit_code is tune's exit status (1 failure,
    2 bad space.json, 3 trials ended in ERROR), name and storage say which experiment, and
    analysis is the ExperimentAnalysis when the experiment ran (None otherwise)."""

    def __init__(self, message, exit_code=None, name=None, storage=None, analysis=None):
        super().__init__(message)
        self.exit_code = exit_code
        self.name = name
        self.storage = storage
        self.analysis = analysis


@contextlib.contextmanager
def _connect(path):
    path = os.path.abspath(path)
    if not os.path.exists(path):
        raise TuneError(f"no database at {path}", storage=path)
    uri = "file:" + urllib.parse.quote(path) + "?mode=ro"
    try:
        con = sqlite3.connect(uri, uri=True)
    except sqlite3.Error as e:
        raise TuneError(f"cannot open {path}: {e}", storage=path) from e
    con.row_factory = sqlite3.Row
    try:
        try:
            con.execute("SELECT 1 FROM experiment_summary LIMIT 0")
        except sqlite3.DatabaseError as e:
            raise TuneError(f"{path} is not a tune database: {e}", storage=path) from e
        yield con
    finally:
        con.close()


def _row(r, json_cols=("config", "last_result"), flags=()):
    d = dict(r)
    for c in json_cols:
        if isinstance(d.get(c), str):
            d[c] = json.loads(d[c])
    for c in flags:  # 0/1 columns of trial_summary, as Python booleans
        if d.get(c) is not None:
            d[c] = bool(d[c])
    return d


def _frame(rows):
    """A pandas DataFrame when pandas is importable, else the list of dicts itself."""
    try:
        import pandas
    except ImportError:
        return rows
    return pandas.DataFrame(rows)


def _objectives(settings_json, metric, mode):
    """(metrics, modes) of an experiment: the engine's resolved settings (experiments.
    settings_json, where several objectives are the lists "metric" and "mode", as
    space.json writes them), else the one metric and mode of the experiments row ([]
    without a metric)."""
    try:
        settings = json.loads(settings_json) if settings_json else {}
    except ValueError:
        settings = {}
    metrics, modes = settings.get("metric"), settings.get("mode")
    if isinstance(metrics, list) and isinstance(modes, list) and len(metrics) == len(modes) \
            and metrics:
        return [str(m) for m in metrics], [str(d) for d in modes]
    return ([metric], [mode or "min"]) if metric else ([], [])


def _constraints(settings_json):
    """The experiment's "constraints" as its resolved settings hold them, {} for none."""
    try:
        c = json.loads(settings_json).get("constraints") if settings_json else None
    except (ValueError, AttributeError):
        c = None
    return c if isinstance(c, dict) else {}


def experiments(storage="tune.db"):
    """One dict per experiment in the database (the experiment_summary view), oldest first."""
    with _connect(storage) as con:
        return [_row(r) for r in con.execute("SELECT * FROM experiment_summary ORDER BY experiment_id")]


class Experiment:
    """One experiment of a tune database, read-only: Experiment("fmnist", storage="tune.db")."""

    def __init__(self, name, storage="tune.db"):
        self.name = name
        self.storage = os.path.abspath(storage)
        with _connect(self.storage) as con:
            row = con.execute("SELECT metric, mode FROM experiment_summary WHERE experiment = ?",
                              (name,)).fetchone()
            if row is None:
                names = [r[0] for r in con.execute("SELECT experiment FROM experiment_summary")]
                raise TuneError(f"no experiment named {name!r} in {self.storage}; it holds: "
                                f"{', '.join(names) or 'none'}", name=name, storage=self.storage)
            stored = con.execute("SELECT settings_json FROM experiments WHERE name = ?",
                                 (name,)).fetchone()
        # mode: what the experiment compares by (as before, "min" when it has no metric);
        # experiment_mode: what it recorded, None when no mode was given
        self.metric, self.experiment_mode = row["metric"], row["mode"]
        self.mode = self.experiment_mode or "min"
        # metrics, modes: every objective (one for a single metric, none without one), as
        # the engine resolved them; metrics[0] is metric.
        self.metrics, self.modes = _objectives(stored[0] if stored else None, self.metric,
                                               self.experiment_mode)
        # constraints: as space.json gives them ({"gpu_mem_gb": {"<=": 16}}), {} for none
        self.constraints = _constraints(stored[0] if stored else None)

    def __repr__(self):
        return f"tune.Experiment({self.name!r}, storage={self.storage!r})"

    def summary(self):
        """The experiment's row of experiment_summary: status, counts, best trial."""
        with _connect(self.storage) as con:
            return _row(con.execute("SELECT * FROM experiment_summary WHERE experiment = ?",
                                    (self.name,)).fetchone())

    def trials(self):
        """One dict per trial (trial_summary), by trial number; config and last_result are
        dicts."""
        with _connect(self.storage) as con:
            return [_row(r, flags=("early_stopped",)) for r in con.execute(
                "SELECT * FROM trial_summary WHERE experiment = ? ORDER BY trial_no", (self.name,))]

    def results(self, trial=None):
        """Every result of the trials' current attempts, in order of arrival per trial: dicts
        with trial, trial_no, iteration, time_value, metric, wall_time and every reported key
        (a reported key never overrides those). trial: a name (trial_00007) or a number."""
        sql = ("SELECT s.trial, s.trial_no, r.iteration, r.time_value, r.metric, r.wall_time, "
               "r.data FROM trial_summary s JOIN results_current r ON r.trial_id = s.trial_id "
               "WHERE s.experiment = ?1")
        args = [self.name]
        if trial is not None:
            sql += " AND (s.trial = ?2 OR s.trial_no = ?2)"
            args.append(trial)
        sql += " ORDER BY s.trial_no, r.id"
        out = []
        with _connect(self.storage) as con:
            for r in con.execute(sql, args):
                d = json.loads(r["data"]) if r["data"] else {}
                d.update({k: r[k] for k in ("trial", "trial_no", "iteration", "time_value",
                                            "metric", "wall_time")})
                out.append(d)
        return out

    # ---- the best trial, as Ray's ExperimentAnalysis finds it ------------------------------
    # Every way in (best_trial, best_config, get_best_result, ...) goes through
    # get_best_trial, which raises instead of answering None: a metric nobody reported, a
    # missing mode, or no value to compare yet are each said in words (issue 28, 5).

    def _several(self):
        """The ValueError for a single best trial asked of several objectives."""
        objs = ", ".join(f"{m} {d}" for m, d in zip(self.metrics, self.modes))
        return ValueError(
            f"experiment {self.name!r} has {len(self.metrics)} objectives ({objs}): there is "
            "no single best trial with several objectives. get_pareto_front() returns the "
            "Pareto front (the feasible trials that no other trial beats in every objective, "
            "as `tune best` prints it); for the best by one objective, name it: "
            f"metric={self.metrics[0]!r}, mode={self.modes[0]!r}")

    def _metric_mode(self, metric, mode):
        if len(self.metrics) > 1 and (metric is None or isinstance(metric, (list, tuple))):
            raise self._several()
        if mode is not None and mode not in ("min", "max"):
            raise ValueError(f"mode must be 'min' or 'max', not {mode!r}")
        if metric is None:
            if self.metric is None:
                raise ValueError(
                    f"experiment {self.name!r} has no metric, so there is no best trial by "
                    "default: pass metric= and mode= (e.g. get_best_trial('loss', 'min'), "
                    "get_best_result(metric='loss', mode='min')), or give tune.run a metric "
                    "and mode" + self._reported_hint())
            metric = self.metric
        if not isinstance(metric, str):
            raise TypeError(f"metric must be the name of a reported value, not {metric!r}")
        if mode is None:
            if len(self.metrics) > 1 and metric in self.metrics:
                return metric, self.modes[self.metrics.index(metric)]
            if metric != self.metric or self.experiment_mode is None:
                raise ValueError(f"pass mode='min' or mode='max' for metric {metric!r}: "
                                 f"the experiment's mode is for its own metric "
                                 f"({self.metric!r}), not this one")
            mode = self.experiment_mode
        return metric, mode

    def reported_keys(self):
        """Every key any result of the trials' current attempts reported, sorted."""
        with _connect(self.storage) as con:
            rows = con.execute(
                "SELECT DISTINCT j.key FROM trial_summary s JOIN results_current r "
                "ON r.trial_id = s.trial_id, json_each(r.data) j WHERE s.experiment = ?",
                (self.name,)).fetchall()
        return sorted(r[0] for r in rows)

    def _reported_hint(self):
        keys = [k for k in self.reported_keys() if k not in ("training_iteration", "checkpoint")]
        return f" (the trials reported: {', '.join(keys)})" if keys else ""

    def _no_best(self, metric, scope):
        """The error for a best trial that cannot be found: an unknown metric (ValueError,
        with did-you-mean and what was reported) or nothing to compare yet (TuneError)."""
        from ._space import did_you_mean
        keys = self.reported_keys()
        if keys and metric not in keys:
            shown = [k for k in keys if k != "checkpoint"]
            return ValueError(f"no trial of {self.name!r} reported {metric!r}"
                              f"{did_you_mean(metric, shown)}; the trials reported: "
                              f"{', '.join(shown)}")
        counts, failed = {}, None
        for t in self.trials():
            counts[t["status"]] = counts.get(t["status"], 0) + 1
            if t["status"] == "ERROR" and failed is None:
                failed = t
        state = ", ".join(f"{n} {st}" for st, n in sorted(counts.items())) or "no trials"
        if failed is not None:  # most often why nothing was reported: say it here
            state += f" (the first, {failed['trial']}: {failed.get('error') or 'no error recorded'})"
        which = "last results" if scope == "last" else "results"
        return TuneError(f"no trial of {self.name!r} has a value of {metric!r} in its {which} "
                         f"to compare (yet): {state}; a NaN or missing value does not count",
                         name=self.name, storage=self.storage)

    def get_best_trial(self, metric=None, mode=None, scope="last", filter_nan_and_inf=True):
        """The best trial (a trial_summary dict) by metric and mode, the experiment's when
        left out: judged by each trial's last result (scope "last", Ray's default; the same
        trial as `tune best`), its best ("all"), the mean of all its results ("avg") or of
        its last 5 or 10 ("last-5-avg", "last-10-avg"); ties go to the lower trial number.
        With constraints and one objective, the experiment's own metric gives the best
        feasible trial, by the last result only, as `tune best` ranks it (TuneError with
        its words when none is feasible). Raises ValueError when there is no metric to go
        by (several objectives and no metric=: get_pareto_front() answers then) or no trial
        reported it, and TuneError when no trial has a value to compare yet. NaN never counts
        (filter_nan_and_inf=False is refused: tune records NaN as missing)."""
        if scope not in ("last", "all", "avg", "last-5-avg", "last-10-avg"):
            raise ValueError(f"scope must be 'last', 'all', 'avg', 'last-5-avg' or "
                             f"'last-10-avg', not {scope!r}")
        if not filter_nan_and_inf:
            raise ValueError("filter_nan_and_inf=False is not supported: tune records NaN and "
                             "infinite values as missing (NULL), so they never compare")
        metric, mode = self._metric_mode(metric, mode)
        if self.constraints and len(self.metrics) == 1 and metric == self.metric \
                and mode == self.experiment_mode:
            # its own objective under constraints: the best feasible trial, as `tune best`
            # ranks it (feasible first), by the last results the constraints judge
            if scope != "last":
                raise ValueError(f"scope={scope!r} cannot be used with the constraints of "
                                 f"{self.name!r}: they judge each trial's last result, and "
                                 "the best trial is the best feasible one by it; leave scope "
                                 "out (or name another metric)")
            row = self._ask("best")
            return next(t for t in self.trials() if t["trial_no"] == row["id"])
        if metric == self.metric and mode == self.experiment_mode and scope in ("last", "all"):
            col = "last_metric" if scope == "last" else "best_metric"
            sign = "-" if mode == "max" else ""
            with _connect(self.storage) as con:
                r = con.execute(f"SELECT * FROM trial_summary WHERE experiment = ? AND {col} "
                                f"IS NOT NULL ORDER BY {sign}{col}, trial_no LIMIT 1",
                                (self.name,)).fetchone()
            if r is None:
                raise self._no_best(metric, scope)
            return _row(r, flags=("early_stopped",))
        best = None
        for t in self.trials():
            v = self._score(t, metric, mode, scope)
            if v is not None and (best is None or v < best[0]):
                best = (v, t)
        if best is None:
            raise self._no_best(metric, scope)
        return best[1]

    def _score(self, t, metric, mode, scope):
        """The trial's value for the scope, negated for "max" (smaller is better), or None."""
        if scope == "last":
            vals = [(t["last_result"] or {}).get(metric)]
        else:
            vals = [r.get(metric) for r in self.results(trial=t["trial_no"])]
        vals = [float(v) for v in vals if isinstance(v, (int, float)) and not isinstance(v, bool)
                and math.isfinite(v)]
        if not vals:
            return None
        sign = 1 if mode == "min" else -1
        if scope == "all":
            return min(sign * v for v in vals)
        if scope != "avg":
            vals = vals[-(5 if scope == "last-5-avg" else 10):]
        return sign * sum(vals) / len(vals)

    # ---- several objectives: the engine's Pareto front ------------------------------------

    def _ask(self, command, *args):
        """The JSON `tune COMMAND NAME --db DB --json ARGS` prints: the engine ranks, this
        only reads. Raises TuneError with tune's own words when it fails."""
        from ._run import find_binary
        p = subprocess.run([find_binary(), command, self.name, "--db", self.storage, "--json",
                            *args], stdin=subprocess.DEVNULL, capture_output=True, text=True)
        if p.returncode != 0:
            said = [ln for ln in p.stderr.splitlines() if ln.strip()]
            raise TuneError("\n".join(said[-10:]) or f"tune {command} exited with status "
                            f"{p.returncode}", exit_code=p.returncode, name=self.name,
                            storage=self.storage)
        try:
            return json.loads(p.stdout)
        except ValueError as e:
            raise TuneError(f"tune {command} --json printed what is not JSON ({e}): "
                            f"{p.stdout[:200]!r}", name=self.name, storage=self.storage) from e

    def get_pareto_front(self):
        """The Pareto front, as the engine ranks it (`tune best --json`): the feasible trials
        (every constraint met by the last result) that no other feasible trial beats in
        every objective, judged by each trial's last result, in the engine's order (by the
        first objective in its mode, then trial number). Each is a trial dict as
        get_best_trial returns, plus "values" ({objective: its last value, as reported}) and
        "violation" (0). With one objective, the best (feasible) trial alone. Raises TuneError with
        tune's words when no trial has a result yet or none is feasible (naming the
        constraint closest to being met)."""
        answer = self._ask("best")
        rows = answer["front"] if isinstance(answer, dict) and "front" in answer else [answer]
        by_no = {t["trial_no"]: t for t in self.trials()}  # after: every id is there
        out = []
        for r in rows:
            t = dict(by_no[r["id"]])
            t.update({k: r[k] for k in ("values", "violation") if k in r})
            out.append(t)
        return out

    def _marks(self):
        """{trial_no: (pareto, feasible)} as the engine marks the trials of several
        objectives in `tune trials --json`: "front" is the trial's level (0: the Pareto
        front; null without a result, with a constraint violated or an objective missing)
        and "violation" its total (0: feasible; null without a result or a constrained
        value)."""
        return {r["id"]: (r.get("front") == 0, r.get("violation") == 0)
                for r in self._ask("trials")}

    @property
    def best_trial(self):
        """The best trial by the experiment's metric and mode (a trial_summary dict), as
        Ray's property; get_best_trial(metric, mode, scope) for others. Raises when there is
        none (see get_best_trial)."""
        return self.get_best_trial()

    def get_best_config(self, metric=None, mode=None, scope="last"):
        """The best trial's configuration (a dict)."""
        return self.get_best_trial(metric, mode, scope)["config"]

    @property
    def best_config(self):
        """The best trial's configuration (a dict); raises when there is no best trial."""
        return self.best_trial["config"]

    @property
    def best_result(self):
        """The best trial's last result (a dict, as Ray's best_result)."""
        return self.best_trial["last_result"]

    @property
    def best_logdir(self):
        """The best trial's folder (Ray's best_logdir; also best_path)."""
        return self.best_trial["trial_dir"]

    best_path = best_logdir

    @property
    def best_dataframe(self):
        """Every result of the best trial, as a DataFrame when pandas is installed."""
        return _frame(self.results(trial=self.best_trial["trial_no"]))

    # ---- checkpoints: the results that named one (docs/schema.md, results.data) ---------

    def _trial(self, trial):
        if isinstance(trial, dict):
            return trial
        for t in self.trials():
            if trial in (t["trial"], t["trial_no"], t["trial_dir"]):
                return t
        raise ValueError(f"experiment {self.name!r} has no trial {trial!r}")

    def checkpoints(self, trial):
        """The checkpoints the trial's current attempt reported that are still on disk
        (tune deletes all but the newest keep_checkpoints, docs/pbt.md), oldest first: a list
        of (tune.Checkpoint, the result that reported it)."""
        from ._checkpoint import Checkpoint
        t = self._trial(trial)
        out = []
        for r in self.results(trial=t["trial_no"]):
            p = r.get("checkpoint")
            if not isinstance(p, str) or not p:
                continue
            if not os.path.isabs(p) and t.get("trial_dir"):
                p = os.path.join(t["trial_dir"], p)
            if os.path.exists(p):
                out.append((Checkpoint(p), r))
        return out

    def get_last_checkpoint(self, trial=None):
        """The trial's latest checkpoint still on disk (the best trial's when left out), a
        tune.Checkpoint, or None when it reported none."""
        cks = self.checkpoints(self.best_trial if trial is None else trial)
        return cks[-1][0] if cks else None

    def get_best_checkpoint(self, trial, metric=None, mode=None):
        """Of the trial's checkpoints still on disk, the one whose result was best by metric
        and mode (the experiment's when left out), or None when none reported the metric."""
        metric, mode = self._metric_mode(metric, mode)
        sign = 1 if mode == "min" else -1
        best = None
        for ck, r in self.checkpoints(trial):
            v = r.get(metric)
            if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v):
                if best is None or sign * v < best[0]:
                    best = (sign * v, ck)
        return best[1] if best else None

    @property
    def best_checkpoint(self):
        """The best trial's best checkpoint (Ray's best_checkpoint), or None."""
        return self.get_best_checkpoint(self.best_trial)

    @property
    def trial_dataframes(self):
        """{trial folder: its results as a DataFrame} (Ray keys them by the trial's folder
        too; t["trial_dir"] of trials() and best_logdir are such keys)."""
        by = {}
        for r in self.results():
            by.setdefault(r["trial_no"], []).append(r)
        return {t["trial_dir"]: _frame(by.get(t["trial_no"], [])) for t in self.trials()}

    def dataframe(self, metric=None, mode=None):
        """One row per trial as Ray's analysis.dataframe(): the last result's keys (with
        metric and mode: the trial's best result by them), then trial, status,
        early_stopped, iterations, best_metric, error, with several objectives or
        constraints pareto (in the Pareto front; with one objective, the best feasible)
        and feasible (every constraint met), as the engine marks them (`tune trials
        --json`), and config/<param>. A pandas DataFrame when pandas is
        installed, else a list of dicts."""
        if (metric is None) != (mode is None):
            raise ValueError("dataframe: give both metric and mode (the best result of each "
                             "trial), or neither (the last result)")
        if mode is not None and mode not in ("min", "max"):
            raise ValueError(f"mode must be 'min' or 'max', not {mode!r}")
        marks = self._marks() if len(self.metrics) > 1 or self.constraints else None
        rows = []
        for t in self.trials():
            d = dict(t["last_result"] or {})
            if metric is not None:
                sign = 1 if mode == "min" else -1
                vals = [r for r in self.results(trial=t["trial_no"])
                        if isinstance(r.get(metric), (int, float))
                        and not isinstance(r.get(metric), bool) and math.isfinite(r[metric])]
                if vals:
                    d = {k: v for k, v in min(vals, key=lambda r: sign * r[metric]).items()
                         if k not in ("trial", "trial_no", "metric", "wall_time", "time_value",
                                      "iteration")}
            for k in ("trial", "trial_no", "status", "early_stopped", "iterations",
                      "last_metric", "best_metric", "error", "trial_dir"):
                d[k] = t.get(k)
            if marks is not None:
                d["pareto"], d["feasible"] = marks.get(t["trial_no"], (False, False))
            for k, v in (t["config"] or {}).items():
                d[f"config/{k}"] = v
            rows.append(d)
        return _frame(rows)

    def results_dataframe(self):
        """Every result (results()), as a DataFrame when pandas is installed."""
        return _frame(self.results())


class ExperimentAnalysis(Experiment):
    """What tune.run returns: the experiment just run, plus where its space.json is."""

    def __init__(self, name, storage="tune.db", space_path=None, exit_code=0):
        super().__init__(name, storage)
        self.space_path = space_path
        self.exit_code = exit_code
