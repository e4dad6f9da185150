-- tune's database schema, version 4: every experiment, trial, result and scheduler
-- decision, plus views for the common questions. This file is compiled into the store
-- library (store/CMakeLists.txt), and run once at build time into the empty database that
-- store_open writes for a new file (store/mkimage.c); it is documented, with example
-- queries, in docs/schema.md. It is not a migration script:
-- a schema change bumps schema_version here and STORE_SCHEMA_VERSION in store/store.h.
--
-- Conventions: times are Unix epoch seconds (REAL); JSON is stored as text and read with
-- SQLite's json_extract(); NULL means "none" or "not applicable" (a NaN metric is NULL).

-- Key/value facts about the file itself. schema_version is what store_open checks: a
-- tune that knows an older version refuses to touch the file.
CREATE TABLE meta (
    key   TEXT PRIMARY KEY NOT NULL,
    value                           -- no declared type: stored as given
);
INSERT INTO meta (key, value) VALUES ('schema_version', 4);

-- One row per `tune run`.
CREATE TABLE experiments (
    id            INTEGER PRIMARY KEY,
    name          TEXT NOT NULL UNIQUE,
    status        TEXT NOT NULL DEFAULT 'RUNNING'
                  CHECK (status = 'RUNNING' OR status = 'FINISHED' OR status = 'INTERRUPTED'),
    created_at    REAL NOT NULL,
    ended_at      REAL,             -- NULL while RUNNING
    metric        TEXT,             -- the result key the scheduler compares
    mode          TEXT NOT NULL CHECK (mode IN ('min', 'max')),
    scheduler     TEXT,             -- 'fifo', 'asha', 'median', 'pbt'
    seed          INTEGER,          -- the 64 bits of the seed (>= 2^63 reads negative)
    num_trials    INTEGER,          -- how many trials the experiment asked for
    results_dir   TEXT,
    space_json    TEXT,             -- space.json exactly as the user wrote it
    settings_json TEXT              -- the resolved settings, defaults filled in
);

-- One row per trial (one sampled configuration). `attempt` counts restarts: results of
-- earlier attempts are kept but superseded (see results_current).
CREATE TABLE trials (
    id            INTEGER PRIMARY KEY,
    experiment_id INTEGER NOT NULL REFERENCES experiments (id) ON DELETE CASCADE,
    trial_no      INTEGER NOT NULL, -- 0-based within the experiment
    name          TEXT NOT NULL,    -- e.g. 'trial_00007'
    -- (the CHECKs spell out OR: SQLite builds a temporary table for an IN list of more
    -- than two values every time a row is checked, which tripled the cost of a trial row)
    status        TEXT NOT NULL DEFAULT 'PENDING'
                  CHECK (status = 'PENDING' OR status = 'RUNNING' OR status = 'PAUSED'
                         OR status = 'TERMINATED' OR status = 'ERROR'),
    early_stopped INTEGER NOT NULL DEFAULT 0 CHECK (early_stopped IN (0, 1)),
    config        TEXT NOT NULL CHECK (json_valid(config)), -- the sampled parameters
    trial_dir     TEXT,
    slice         TEXT,             -- the resources held: 'gpu:0,1', 'gpu:2@0.25', 'cpu'
    pid           INTEGER,
    exec_id       TEXT,             -- the executor's id, e.g. a Slurm job '12345.3'
    node          TEXT,
    attempt       INTEGER NOT NULL DEFAULT 1,
    started_at    REAL,
    ended_at      REAL,
    exit_code     INTEGER,          -- NULL when the process did not exit normally
    exit_signal   INTEGER,          -- NULL unless a signal ended the process
    error         TEXT,             -- why the trial failed or was stopped, for people
    stderr_tail   TEXT,             -- the last lines the trial wrote to stderr
    -- why the searcher chose this configuration ('points_to_evaluate[2]', 'TPE (optuna) at
    -- rung 3 from 31 observations', 'random: model not ready ...'); NULL for random search,
    -- sampled up front. Added in schema version 2 (a version-1 file gains it, last, on open).
    suggested_by  TEXT,
    UNIQUE (experiment_id, trial_no)
);

-- The trial's configuration spread out, one row per top-level key, so that SQL can filter
-- on parameters without json_extract: numbers (and booleans, as 1/0) in value_real,
-- strings in value_text, and every value as JSON text in value_json.
CREATE TABLE params (
    trial_id   INTEGER NOT NULL REFERENCES trials (id) ON DELETE CASCADE,
    name       TEXT NOT NULL,
    value_real REAL,
    value_text TEXT,
    value_json TEXT NOT NULL,
    PRIMARY KEY (trial_id, name)
) WITHOUT ROWID;

-- Every reported result. This is the hot table (the target is a million rows a second),
-- so it is lean: no index and no foreign key, both measured to halve the insert rate
-- (docs/schema.md, "Performance"). trial_id names a row of trials; the store checks that
-- when it adds the result. `data` is the whole result object as the trial reported it;
-- `metric` repeats the experiment's metric as a number. Ids follow arrival within each
-- trial; the results of one batch are written grouped by trial (see result_ranges).
CREATE TABLE results (
    id         INTEGER PRIMARY KEY,
    trial_id   INTEGER NOT NULL,    -- trials.id
    attempt    INTEGER NOT NULL,
    iteration  INTEGER,
    time_value REAL,                -- the value of the scheduler's time_attr
    metric     REAL,                -- NULL when missing or not a number (NaN)
    wall_time  REAL,
    data       TEXT NOT NULL        -- JSON object
);

-- The index of results by trial, one row per run of consecutive ids: the store writes each
-- batch's results grouped by trial, so results first_id..last_id all belong to trial_id
-- and attempt. Per-trial questions (count, last, best) read these few rows instead of the
-- results, and a trial's results are found as id ranges (see results_all).
CREATE TABLE result_ranges (
    trial_id   INTEGER NOT NULL REFERENCES trials (id) ON DELETE CASCADE,
    attempt    INTEGER NOT NULL,
    first_id   INTEGER NOT NULL,    -- results.id of the range's first result
    last_id    INTEGER NOT NULL,    -- and of its last
    n          INTEGER NOT NULL,    -- last_id - first_id + 1
    min_metric REAL,                -- over the range, NULL metrics left out
    max_metric REAL,
    PRIMARY KEY (trial_id, attempt, first_id)
) WITHOUT ROWID;

-- Why each judged result let its trial continue or stopped it (ASHA rungs, median rule).
-- Written with the results, and lean like them: no index and no foreign key (the store
-- checks trial_id); a trial's decisions are found by scanning, which stays quick since a
-- scheduler judges only some results (ASHA: those at rung milestones).
CREATE TABLE decisions (
    id         INTEGER PRIMARY KEY, -- order of arrival
    trial_id   INTEGER NOT NULL,    -- trials.id
    iteration  INTEGER,
    time_value REAL,
    action     TEXT NOT NULL,       -- continue, stop, complete, pause, promote, resume, exploit, keep, gap (docs/schema.md)
    bracket    INTEGER,             -- NULL when not applicable
    rung       INTEGER,             -- NULL when not applicable
    milestone  REAL,
    value      REAL,                -- the trial's value as the scheduler compared it
    cutoff     REAL,                -- NULL when there was none yet
    reason     TEXT,
    wall_time  REAL,
    criterion  TEXT                 -- 'complete' by a "stop" criterion: its key; else NULL
);

-- Population Based Training's family tree: one row per exploit (a trial took another
-- trial's checkpoint and a perturbed configuration, and restarted as a new attempt).
-- Rare (one row per perturbation interval at most per trial), so it keeps foreign keys
-- and an index. Added in schema version 3 (a version-1 or -2 file gains it on open).
CREATE TABLE lineage (
    id               INTEGER PRIMARY KEY, -- order of the exploits
    experiment_id    INTEGER NOT NULL REFERENCES experiments (id) ON DELETE CASCADE,
    trial_id         INTEGER NOT NULL,    -- trials.id of the trial that was exploited
    attempt          INTEGER NOT NULL,    -- the new attempt, which starts from the checkpoint
    iteration        INTEGER,             -- the trial's iteration when it was exploited
    time_value       REAL,                -- and its time_attr value
    donor_trial_id   INTEGER NOT NULL,    -- trials.id of the trial it cloned
    donor_attempt    INTEGER,
    donor_iteration  INTEGER,             -- the donor's iteration at its checkpoint
    donor_time_value REAL,                -- and its time_attr value
    donor_checkpoint TEXT,                -- the donor's checkpoint as the donor reported it
    resume_from      TEXT,                -- the copy the new attempt got in TUNE_RESUME_FROM
    old_config       TEXT CHECK (old_config IS NULL OR json_valid(old_config)),
    new_config       TEXT NOT NULL CHECK (json_valid(new_config)),
    explore          TEXT,                -- JSON: what happened to each parameter
    value            REAL,                -- the trial's value when it was exploited
    donor_value      REAL,                -- the donor's
    wall_time        REAL
);
CREATE INDEX lineage_trial ON lineage (trial_id, attempt);
CREATE INDEX lineage_experiment ON lineage (experiment_id);

-- Every result with its trial found through result_ranges: the same rows as `results`,
-- but `WHERE trial_id = ?` reads only that trial's ranges.
CREATE VIEW results_all AS
SELECT r.id, g.trial_id, g.attempt, r.iteration, r.time_value, r.metric, r.wall_time, r.data
FROM result_ranges g
JOIN results r ON r.id BETWEEN g.first_id AND g.last_id;

-- Results of each trial's current attempt only: earlier attempts are superseded.
CREATE VIEW results_current AS
SELECT r.id, g.trial_id, g.attempt, r.iteration, r.time_value, r.metric, r.wall_time, r.data
FROM trials t
JOIN result_ranges g ON g.trial_id = t.id AND g.attempt = t.attempt
JOIN results r ON r.id BETWEEN g.first_id AND g.last_id;

-- One row per trial: where it stands and how well it did (current attempt only).
CREATE VIEW trial_summary AS
SELECT e.name AS experiment,
       t.trial_no,
       t.name AS trial,
       t.status,
       t.early_stopped,
       (SELECT coalesce(sum(g.n), 0) FROM result_ranges g
         WHERE g.trial_id = t.id AND g.attempt = t.attempt) AS iterations,
       r.metric AS last_metric,
       CASE e.mode
         WHEN 'max' THEN (SELECT max(g.max_metric) FROM result_ranges g
                           WHERE g.trial_id = t.id AND g.attempt = t.attempt)
         ELSE (SELECT min(g.min_metric) FROM result_ranges g
                WHERE g.trial_id = t.id AND g.attempt = t.attempt)
       END AS best_metric,
       t.config,
       r.data AS last_result,
       t.attempt,
       t.slice,
       t.started_at,
       t.ended_at,
       t.exit_code,
       t.exit_signal,
       t.error,
       t.trial_dir,
       t.experiment_id,
       t.id AS trial_id
FROM trials t
JOIN experiments e ON e.id = t.experiment_id
-- the last result of the current attempt ends the range with the highest first_id
LEFT JOIN results r ON r.id = (SELECT g.last_id FROM result_ranges g
                                WHERE g.trial_id = t.id AND g.attempt = t.attempt
                                ORDER BY g.first_id DESC LIMIT 1);

-- One row per experiment: trials by status and the best metric of any trial.
CREATE VIEW experiment_summary AS
SELECT e.name AS experiment,
       e.status,
       e.scheduler,
       e.metric,
       e.mode,
       e.num_trials,
       count(s.trial_id) AS trials,
       coalesce(sum(s.status = 'PENDING'), 0) AS pending,
       coalesce(sum(s.status = 'RUNNING'), 0) AS running,
       coalesce(sum(s.status = 'PAUSED'), 0) AS paused,
       coalesce(sum(s.status = 'TERMINATED'), 0) AS terminated,
       coalesce(sum(s.status = 'ERROR'), 0) AS errors,
       coalesce(sum(s.early_stopped), 0) AS early_stopped,
       coalesce(sum(s.iterations), 0) AS results,
       CASE e.mode WHEN 'max' THEN max(s.best_metric) ELSE min(s.best_metric) END
         AS best_metric,
       (SELECT b.trial FROM trial_summary b JOIN experiments be ON be.id = b.experiment_id
         WHERE b.experiment_id = e.id AND b.best_metric IS NOT NULL
         ORDER BY CASE be.mode WHEN 'max' THEN -b.best_metric ELSE b.best_metric END,
                  b.trial_no
         LIMIT 1) AS best_trial,   -- ties go to the lower trial_no
       e.created_at,
       e.ended_at,
       e.id AS experiment_id
FROM experiments e
LEFT JOIN trial_summary s ON s.experiment_id = e.id
GROUP BY e.id;
