// The SQLite C library of the system (Debian: libsqlite3-dev), which the server's SQLite store drives directly.
#include <sqlite3.h>

// sqlite3_config takes variable arguments, which Swift cannot call: one fixed-argument wrapper per setting used.

// Keeps a statement journal in memory until it holds `bytes` (SQLite's default: 64 KiB). Must run before SQLite
// is initialised (its first connection); returns SQLITE_MISUSE after that.
static inline int assent_sqlite3_statement_journal_spill(int bytes) {
    return sqlite3_config(SQLITE_CONFIG_STMTJRNL_SPILL, bytes);
}
