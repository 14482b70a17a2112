package nsys

import (
	"database/sql"
	"net/url"
	"path/filepath"

	_ "modernc.org/sqlite" // registers the pure-Go "sqlite" driver
)

// Open opens the Nsight Systems export at path for reading only; every reader of an export
// (this package's Load, the redacted copy pel trace --redact and pel pack write) opens it
// here, with the same options:
//
//   - mode=ro: SQLite opens the file O_RDONLY, so no statement can change the user's export.
//   - immutable=1: the export is a finished file (nsys writes it once, at the end of
//     nsys export), so SQLite takes no lock and looks for no journal or WAL: nothing is
//     created beside the export (it may sit in a read-only or shared directory), and a
//     reader never waits on a lock another process holds. SQLite's URI documentation
//     ("immutable") says this is for files that cannot change while open; an export being
//     rewritten while pel reads it gives rows or a "malformed" error, never a write.
//   - _query_only=1: PRAGMA query_only, so a write is refused by SQLite itself before it
//     reaches the read-only file.
//
// With no lock taken, SQLITE_BUSY cannot arise, and the driver's busy timeout stays at its
// default of zero: no call waits on a lock, and every wait that is left (a long query)
// ends with the context given to QueryContext. The caller checks that path is a regular
// file first: opening a FIFO blocks inside SQLite, beyond any context.
func Open(path string) (*sql.DB, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	// file:///abs/path?…, escaped: a '?' or '#' in the name stays part of the path.
	u := url.URL{Scheme: "file", Path: abs, RawQuery: "mode=ro&immutable=1&_query_only=1"}
	return sql.Open("sqlite", u.String())
}
