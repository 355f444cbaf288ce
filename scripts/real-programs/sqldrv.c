/* A small SQLite workload: rows, an index, a GROUP BY, a self-join, a sort. */
#include <stdio.h>
#include "sqlite3.h"
static int cb(void *p, int n, char **v, char **c) { (void)p; (void)c; for (int i = 0; i < n; i++) printf("%s%s", v[i] ? v[i] : "NULL", i + 1 < n ? "|" : "\n"); return 0; }
static void run(sqlite3 *db, const char *sql) { char *err = 0; if (sqlite3_exec(db, sql, cb, 0, &err) != SQLITE_OK) { printf("error: %s\n", err); sqlite3_free(err); } }
int main(void) {
    sqlite3 *db; sqlite3_open(":memory:", &db);
    run(db, "CREATE TABLE t(id INTEGER PRIMARY KEY, k INTEGER, v TEXT);");
    run(db, "BEGIN;");
    sqlite3_stmt *st; sqlite3_prepare_v2(db, "INSERT INTO t(k, v) VALUES(?, ?);", -1, &st, 0);
    for (int i = 0; i < 20000; i++) { char buf[32]; snprintf(buf, sizeof buf, "row%d", (i * 7919) % 20000); sqlite3_bind_int(st, 1, (i * 31) % 97); sqlite3_bind_text(st, 2, buf, -1, SQLITE_TRANSIENT); sqlite3_step(st); sqlite3_reset(st); }
    sqlite3_finalize(st);
    run(db, "COMMIT;");
    run(db, "CREATE INDEX tk ON t(k);");
    run(db, "SELECT k, count(*), min(v), max(v) FROM t GROUP BY k ORDER BY k LIMIT 10;");
    run(db, "SELECT count(*) FROM t a JOIN t b ON a.k = b.k AND a.id < b.id WHERE a.k < 5;");
    run(db, "SELECT v FROM t ORDER BY v DESC LIMIT 5;");
    sqlite3_close(db);
    return 0;
}
