"""Read-only readers of a tune database: tune.Experiment, tune.experiments, the analysis.

Every query goes through the documented views (docs/schema.md: trial_summary,
experiment_summary, results_current) on a connection opened read-only
(`file:PATH?mode=ro`), fresh for each call, so a notebook can read an experiment while
`tune` writes it (WAL: readers never block the writer). Not for: writing anything.
"""

import contextlib
import json
import os
import sqlite3
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
        self.metric, self.mode = row["metric"], row["mode"] or "min"

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

    def best_trial(self, scope="last"):
        """The best trial as `tune best` chooses it: by its last result (scope "last", Ray's
        default) or its best result (scope "all"), ties to the lower trial number; None
        when no trial reported the metric."""
        if scope not in ("last", "all"):
            raise ValueError(f"scope must be 'last' or 'all', not {scope!r}")
        col = "last_metric" if scope == "last" else "best_metric"
        sign = "-" if self.mode == "max" else ""
        with _connect(self.storage) as con:
            r = con.execute(f"SELECT * FROM trial_summary WHERE experiment = ? AND {col} IS NOT NULL"
                            f" ORDER BY {sign}{col}, trial_no LIMIT 1", (self.name,)).fetchone()
        return _row(r, flags=("early_stopped",)) if r else None

    @property
    def best_config(self):
        """The best trial's configuration (a dict), or None."""
        t = self.best_trial()
        return t["config"] if t else None

    @property
    def best_result(self):
        """The best trial's last result (a dict, as Ray's best_result), or None."""
        t = self.best_trial()
        return t["last_result"] if t else None

    def dataframe(self):
        """One row per trial as Ray's analysis.dataframe(): the last result's keys, then
        trial, status, early_stopped, iterations, best_metric, error and config/<param>.
        A pandas DataFrame when pandas is installed, else a list of dicts."""
        rows = []
        for t in self.trials():
            d = dict(t["last_result"] or {})
            for k in ("trial", "trial_no", "status", "early_stopped", "iterations",
                      "last_metric", "best_metric", "error", "trial_dir"):
                d[k] = t.get(k)
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
