package redact

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/pel-ladder/pel/internal/safefile"
	"github.com/pel-ladder/pel/trace/nsys"
)

// TableDropped counts the tables of an Nsight export that pel does not read: they are
// left out of the redacted export whole (the capture's environment, command line, process
// list, OS runtime calls and call chains, analysis files).
const TableDropped Kind = "Nsight table pel does not read"

// ValueDropped counts the values of an Nsight export over nsys.MaxValueBytes: they are
// copied as NULL, as pel's reader reads them, and never loaded.
const ValueDropped Kind = "Nsight value over 1 MiB"

// nsysTables are the tables pel's Nsight reader (package trace/nsys) reads, besides the
// ENUM_* label tables (fixed by nsys, no identifiers) and StringIds (filtered).
var nsysTables = []string{
	"TARGET_INFO_GPU",
	"CUPTI_ACTIVITY_KIND_KERNEL",
	"CUPTI_ACTIVITY_KIND_MEMCPY",
	"CUPTI_ACTIVITY_KIND_MEMSET",
	"CUPTI_ACTIVITY_KIND_SYNCHRONIZATION",
	"CUPTI_ACTIVITY_KIND_RUNTIME",
}

// nsysStringRefs are the columns of the kept tables that name a StringIds row.
var nsysStringRefs = []string{"demangledName", "shortName", "mangledName", "nameId"}

// MaxNsysRows bounds the rows copied from one table (pel's reader keeps fewer).
const MaxNsysRows = 50_000_000

// stopEvery is how many rows are copied between two looks at the context (one ctx.Err
// call, against a scan and an insert per row): the looks cost nothing measurable, and a stop
// lands within 4096 rows, besides SQLite's own interruption of the statement under way.
const stopEvery = 4096

// NsysResult says what the Nsight redaction kept and left out.
type NsysResult struct {
	Kept, Dropped []string
	// StringsKept and StringsDropped count StringIds rows.
	StringsKept, StringsDropped int64
}

// ErrInterrupted is the error of a redaction stopped by its context (Ctrl-C); it wraps the
// context's own error too, so errors.Is(err, context.Canceled) holds.
var ErrInterrupted = errors.New("interrupted")

// interrupted is err, or the context's stop once it is done: a query SQLite abandoned
// when the context ended fails with "interrupted" or with a closed statement, which would
// otherwise read as a bad export.
func (r *Redactor) interrupted(err error) error {
	if e := r.Stopped(); e != nil {
		return fmt.Errorf("%w: %w", ErrInterrupted, e)
	}
	return err
}

// context is the context set by SetContext, or one that never ends.
func (r *Redactor) context() context.Context {
	if r.ctx == nil {
		return context.Background()
	}
	return r.ctx
}

// Nsys writes a redacted copy of the Nsight Systems SQLite export src as the new database
// dst (which must not exist): only the tables pel reads are copied, StringIds only for
// the names those tables use (kernel and CUDA API names), each text value is rewritten
// (Text; a GPU's uuid becomes a pseudonym), and the rest is never copied, so no page of dst
// ever held the capture's environment, paths or host names. src is opened as every export
// is (nsys.Open). Every query and insert runs under the context (SetContext): a stop
// interrupts SQLite mid-statement, and Nsys then returns ErrInterrupted. On any error dst
// is removed: no half-copied export is left to pass for a redacted one.
func (r *Redactor) Nsys(src, dst string) (res *NsysResult, err error) {
	// dst is created here, exclusively: the removal on error below can then only remove
	// what Nsys made, never a file that was there before.
	f, err := safefile.Create(dst)
	if err != nil {
		return nil, err
	}
	f.Close()
	defer func() {
		if err != nil {
			err = r.interrupted(err)
			os.Remove(dst) // closed by now, its transaction rolled back (no journal left)
		}
	}()
	res, err = r.nsys(src, dst)
	return res, err
}

func (r *Redactor) nsys(src, dst string) (*NsysResult, error) {
	ctx := r.context()
	in, err := nsys.Open(src)
	if err != nil {
		return nil, err
	}
	defer in.Close()
	in.SetMaxOpenConns(1)
	// dst as a file: URI, escaped: the driver would cut a plain name at a '?' and open
	// another file.
	abs, err := filepath.Abs(dst)
	if err != nil {
		return nil, err
	}
	out, err := sql.Open("sqlite", (&url.URL{Scheme: "file", Path: abs}).String())
	if err != nil {
		return nil, err
	}
	defer out.Close()
	out.SetMaxOpenConns(1)

	schema := map[string]string{}
	rows, err := in.QueryContext(ctx, `SELECT name, sql FROM sqlite_master WHERE type = 'table' AND sql IS NOT NULL`)
	if err != nil {
		return nil, fmt.Errorf("not an SQLite database: %w", err)
	}
	for rows.Next() {
		var n, s string
		if err := rows.Scan(&n, &s); err != nil {
			rows.Close()
			return nil, err
		}
		schema[n] = s
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if schema["StringIds"] == "" || (schema["CUPTI_ACTIVITY_KIND_KERNEL"] == "" && schema["CUPTI_ACTIVITY_KIND_RUNTIME"] == "") {
		return nil, fmt.Errorf("no StringIds or CUPTI_ACTIVITY_KIND_KERNEL/RUNTIME tables: not an Nsight Systems export with CUDA trace")
	}
	keep := map[string]bool{}
	for _, t := range nsysTables {
		keep[t] = schema[t] != ""
	}
	res := &NsysResult{}
	var names []string
	for n := range schema {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		switch {
		case keep[n]:
			res.Kept = append(res.Kept, n)
		case strings.HasPrefix(n, "ENUM_") && validIdent(n):
			keep[n] = true
			res.Kept = append(res.Kept, n)
		case n == "StringIds":
		default:
			res.Dropped = append(res.Dropped, n)
			r.Removed(TableDropped)
		}
	}
	// The transaction ends with ctx: database/sql rolls it back once ctx is done.
	tx, err := out.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	refs := map[int64]bool{}
	for _, n := range res.Kept {
		if err := r.copyTable(ctx, in, tx, n, !strings.HasPrefix(n, "ENUM_"), refs); err != nil {
			return nil, fmt.Errorf("%s: %w", n, err)
		}
	}
	// StringIds as nsys declares it (the id is the row id, so pel's lookups by id stay
	// cheap), whatever the export says.
	if _, err := tx.ExecContext(ctx, `CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT)`); err != nil {
		return nil, fmt.Errorf("StringIds: %w", err)
	}
	ins, err := tx.PrepareContext(ctx, `INSERT INTO StringIds (id, value) VALUES (?, ?)`)
	if err != nil {
		return nil, err
	}
	defer ins.Close()
	srows, err := in.QueryContext(ctx, `SELECT id, `+nsys.Bounded("[value]")+`, octet_length([value]) > ? FROM StringIds`, nsys.MaxValueBytes)
	if err != nil {
		return nil, fmt.Errorf("StringIds: %w", err)
	}
	defer srows.Close()
	for count := 1; srows.Next(); count++ {
		if count%stopEvery == 0 {
			if err := r.Stopped(); err != nil {
				return nil, err
			}
		}
		var id int64
		var v sql.NullString
		var over sql.NullBool
		if err := srows.Scan(&id, &v, &over); err != nil {
			return nil, fmt.Errorf("StringIds: %w", err)
		}
		if over.Bool {
			r.Removed(ValueDropped)
		}
		if !refs[id] {
			res.StringsDropped++
			continue
		}
		res.StringsKept++
		var value any // NULL stays NULL (a value over the bound reads as one)
		if v.Valid {
			value = r.Text(v.String)
		}
		if _, err := ins.ExecContext(ctx, id, value); err != nil {
			return nil, err
		}
	}
	if err := srows.Err(); err != nil {
		return nil, err
	}
	if err := r.Stopped(); err != nil {
		return nil, err // a stop after the last row: nothing is committed
	}
	if err := tx.Commit(); err != nil {
		return nil, err
	}
	return res, nil
}

// copyTable creates table n in tx with src's stored columns, by name only, and copies
// their rows, rewriting each text value when rewrite; the ids of StringIds rows that its
// name columns use go to refs. The export's own CREATE statement is never run: its CHECK
// constraints and defaults would be evaluated on every insert, and a generated column on
// every read, each an expression of the export's choosing (one that allocates 300 MB per
// row, say). Without declared types every value keeps the storage class it had (no
// affinity converts it), which is what pel's reader reads.
func (r *Redactor) copyTable(ctx context.Context, in *sql.DB, tx *sql.Tx, n string, rewrite bool, refs map[int64]bool) error {
	if !validIdent(n) {
		return fmt.Errorf("odd table name")
	}
	cols, err := storedColumns(ctx, in, n)
	if err != nil {
		return err
	}
	if len(cols) == 0 {
		return fmt.Errorf("no stored columns")
	}
	quoted := make([]string, len(cols))
	marks := make([]string, len(cols))
	ref := make([]bool, len(cols))
	for i, c := range cols {
		quoted[i] = `"` + strings.ReplaceAll(c, `"`, `""`) + `"`
		marks[i] = "?"
		for _, s := range nsysStringRefs {
			ref[i] = ref[i] || c == s
		}
	}
	list := strings.Join(quoted, ",")
	if _, err := tx.ExecContext(ctx, `CREATE TABLE "`+n+`" (`+list+`)`); err != nil {
		return err
	}
	bounded := make([]string, len(quoted))
	over := make([]string, len(quoted))
	for i, q := range quoted {
		bounded[i] = nsys.Bounded(q)
		over[i] = `coalesce(octet_length(` + q + `) > ` + strconv.Itoa(nsys.MaxValueBytes) + `, 0)`
	}
	// The last column counts the row's values left out.
	rows, err := in.QueryContext(ctx, `SELECT `+strings.Join(bounded, ",")+`, `+strings.Join(over, "+")+` FROM "`+n+`"`)
	if err != nil {
		return err
	}
	defer rows.Close()
	ins, err := tx.PrepareContext(ctx, `INSERT INTO "`+n+`" (`+strings.Join(quoted, ",")+`) VALUES (`+strings.Join(marks, ",")+`)`)
	if err != nil {
		return err
	}
	defer ins.Close()
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols)+1)
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	var dropped int64
	ptrs[len(cols)] = &dropped
	count := 0
	for rows.Next() {
		if count++; count > MaxNsysRows {
			return fmt.Errorf("more than %d rows", MaxNsysRows)
		}
		if count%stopEvery == 0 {
			if err := r.Stopped(); err != nil {
				return err
			}
		}
		if err := rows.Scan(ptrs...); err != nil {
			return err
		}
		if dropped > 0 {
			r.Removed(ValueDropped)
		}
		for i, v := range vals {
			switch x := v.(type) {
			case int64:
				if ref[i] {
					refs[x] = true
				}
			case string:
				if rewrite {
					if strings.EqualFold(cols[i], "uuid") {
						vals[i] = r.GPU(x)
					} else {
						vals[i] = r.Text(x)
					}
				}
			case []byte:
				if rewrite {
					vals[i] = nil // a blob pel does not read may hold anything
				}
			}
		}
		if _, err := ins.ExecContext(ctx, vals...); err != nil {
			return err
		}
	}
	return rows.Err()
}

// maxColumns bounds the columns read of one table: SQLite's own default limit
// (SQLITE_MAX_COLUMN, 2000); an Nsight table has a few dozen.
const maxColumns = 2000

// storedColumns are table n's columns that hold values (pragma table_xinfo's hidden 0):
// generated columns (hidden 2 and 3) are computed from an expression, not stored.
func storedColumns(ctx context.Context, in *sql.DB, n string) ([]string, error) {
	rows, err := in.QueryContext(ctx, `SELECT name FROM pragma_table_xinfo(?) WHERE hidden = 0 LIMIT ?`, n, maxColumns+1)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var cols []string
	for rows.Next() {
		var c string
		if err := rows.Scan(&c); err != nil {
			return nil, err
		}
		cols = append(cols, c)
	}
	if len(cols) > maxColumns {
		return nil, fmt.Errorf("more than %d columns", maxColumns)
	}
	return cols, rows.Err()
}

func validIdent(n string) bool {
	if n == "" || len(n) > 128 {
		return false
	}
	for i := 0; i < len(n); i++ {
		c := n[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '_') {
			return false
		}
	}
	return true
}
