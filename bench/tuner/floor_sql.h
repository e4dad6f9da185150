/* floor_sql.h: the SQLite that the benchmarks' floors write with, shared by
 * bench_decide_store (the in-process floor) and launch_floor --db (results kept durable,
 * with the trials as processes). Header-only: each benchmark is a single-file program. */
#ifndef TUNE_BENCH_FLOOR_SQL_H
#define TUNE_BENCH_FLOOR_SQL_H

/* What store/store.c's store_open sets on a writable handle, copied by value since its
 * constants are private to store.c (10000 is its STORE_CHECKPOINT_PAGES): keep in step. */
static const char floor_pragmas[] = "PRAGMA journal_mode = WAL;"
                                    "PRAGMA synchronous = NORMAL;"
                                    "PRAGMA foreign_keys = ON;"
                                    "PRAGMA wal_autocheckpoint = 10000;";
/* store/schema.sql's results table, column for column. */
static const char floor_schema[] = "CREATE TABLE results ("
                                   " id         INTEGER PRIMARY KEY,"
                                   " trial_id   INTEGER NOT NULL,"
                                   " attempt    INTEGER NOT NULL,"
                                   " iteration  INTEGER,"
                                   " time_value REAL,"
                                   " metric     REAL,"
                                   " wall_time  REAL,"
                                   " data       TEXT NOT NULL)";

#endif
