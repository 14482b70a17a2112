package nsys

import (
	"database/sql"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"

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

// MaxValueBytes bounds a value read from an export: a longer text or blob reads as NULL (a
// name left out, a number not there), and SQLite never loads it, since octet_length reads
// only the value's header. Without it one 300 MB string cost 300 MB of memory to read a
// name cut to timeline's MaxNameBytes (16 KiB); the bound is 64 times that, so every name
// pel keeps is read as before, and what one value can cost is bounded.
const MaxValueBytes = 1 << 20

// Bounded is the column col (quoted as SQL wants it) read under MaxValueBytes, for a
// SELECT list.
func Bounded(col string) string {
	return `CASE WHEN octet_length(` + col + `) > ` + strconv.Itoa(MaxValueBytes) + ` THEN NULL ELSE ` + col + ` END`
}

// BoundedList is Bounded of each named column (a plain name, bracketed: end is an SQL
// keyword, and a missing column is then an error, not a string literal), comma-separated.
func BoundedList(names ...string) string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = Bounded("[" + n + "]")
	}
	return strings.Join(out, ", ")
}
