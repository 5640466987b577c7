// The SQLite C library of the system (Debian: libsqlite3-dev), which the server's SQLite store drives directly.
#include <sqlite3.h>
