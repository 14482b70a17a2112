package nsys

import (
	"context"
	"database/sql"
	"fmt"
	"sort"
	"strings"

	"github.com/pel-ladder/pel/trace/timeline"
)

// Load reads the export at path (opened read-only, see Open).
func Load(path string) (*timeline.Timeline, error) { return LoadContext(context.Background(), path) }

// LoadContext is Load whose queries end when ctx does: SQLite is interrupted mid-query (an
// export's table may be a view over a query that never ends), and Load returns ctx's error.
func LoadContext(ctx context.Context, path string) (*timeline.Timeline, error) {
	db, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	// two connections: StringIds is looked up while a table's rows are being read
	db.SetMaxOpenConns(2)
	tables, err := tableSet(ctx, db)
	if err != nil {
		return nil, err
	}
	if !tables["StringIds"] || (!tables["CUPTI_ACTIVITY_KIND_KERNEL"] && !tables["CUPTI_ACTIVITY_KIND_RUNTIME"]) {
		return nil, fmt.Errorf("no StringIds or CUPTI_ACTIVITY_KIND_KERNEL/RUNTIME tables: not an Nsight Systems export with CUDA trace")
	}
	l := &loader{ctx: ctx, db: db, tables: tables, names: timeline.NewNames(), ranks: map[int64]*timeline.Rank{},
		budget: timeline.Budget{Max: timeline.DefaultLimits.MaxRecords},
		pidIdx: map[int64]int64{}, corrDev: map[int64]int64{}, pidDev: map[int64]map[int64]int{}}
	if err := l.strings(); err != nil {
		return nil, fmt.Errorf("StringIds: %w", err)
	}
	defer l.strStmt.Close()
	for _, step := range []struct {
		table string
		fn    func() error
	}{
		{"TARGET_INFO_GPU", l.gpus},
		{"CUPTI_ACTIVITY_KIND_KERNEL", l.kernels},
		{"CUPTI_ACTIVITY_KIND_MEMCPY", l.memcpys},
		{"CUPTI_ACTIVITY_KIND_MEMSET", l.memsets},
		{"CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", l.syncs},
		{"CUPTI_ACTIVITY_KIND_RUNTIME", l.runtime},
	} {
		if !tables[step.table] {
			continue
		}
		if err := step.fn(); err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err() // interrupted, not a bad table
			}
			return nil, fmt.Errorf("%s: %w", step.table, err)
		}
	}
	if l.bad.Any() {
		return nil, &l.bad
	}
	if l.budget.Used > l.budget.Max {
		return nil, &timeline.ErrTooLarge{Max: l.budget.Max}
	}
	tl := &timeline.Timeline{Format: "nsys", Names: l.names, Notes: l.names.LimitNotes()}
	for _, r := range l.ranks {
		tl.Ranks = append(tl.Ranks, r)
	}
	sort.Slice(tl.Ranks, func(i, j int) bool { return tl.Ranks[i].Rank < tl.Ranks[j].Rank })
	if len(tl.Ranks) == 0 {
		tl.Notes = append(tl.Notes, "no GPU activity in the export")
	}
	return tl, nil
}

type loader struct {
	ctx     context.Context
	db      *sql.DB
	tables  map[string]bool
	str     map[int64]string
	strStmt *sql.Stmt
	names   *timeline.Names
	ranks   map[int64]*timeline.Rank
	devName map[int64]string
	pidIdx  map[int64]int64
	corrDev map[int64]int64         // unique correlation → device
	pidDev  map[int64]map[int64]int // process → device → operations
	enums   map[string]map[int64]string
	bad     timeline.MalformedError
	budget  timeline.Budget
	threads timeline.Threads
}

// malformed counts a row whose times would make a duration negative (end before start, a
// negative start) and the records kept against the limit; such rows are left out and the
// export is then reported as malformed (or too large) as a whole.
func (l *loader) malformed(table string, start, end int64) bool {
	if l.bad.Check(float64(start)/1000, (float64(end)-float64(start))/1000, func() string {
		return fmt.Sprintf("a %s row starting at %d ns", table, start)
	}) {
		return true
	}
	l.budget.Used++
	return l.budget.Used > l.budget.Max // stop keeping rows; Load reports ErrTooLarge
}

func tableSet(ctx context.Context, db *sql.DB) (map[string]bool, error) {
	rows, err := db.QueryContext(ctx, `SELECT name FROM sqlite_master WHERE type IN ('table','view')`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	m := map[string]bool{}
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return nil, err
		}
		m[n] = true
	}
	return m, rows.Err()
}

// strings prepares the StringIds lookup. Strings are read when a kept row names them (and
// cached), each cut to MaxNameBytes by SQLite: memory follows the names kept, not the size
// of the export's string table.
func (l *loader) strings() error {
	l.str = map[int64]string{}
	var err error
	l.strStmt, err = l.db.PrepareContext(l.ctx, `SELECT substr(`+Bounded("[value]")+`, 1, ?) FROM StringIds WHERE id = ?`)
	return err
}

// lookup returns string id of StringIds ("" when absent).
func (l *loader) lookup(id int64) string {
	if s, ok := l.str[id]; ok {
		return s
	}
	var v sql.NullString
	if err := l.strStmt.QueryRowContext(l.ctx, timeline.DefaultLimits.MaxNameBytes, id).Scan(&v); err != nil {
		v.String = ""
	}
	if len(l.str) < maxCachedStrings {
		l.str[id] = v.String
	}
	return v.String
}

// maxCachedStrings bounds the lookup cache (an export can name millions of distinct
// strings); past it, lookups go to SQLite each time.
const maxCachedStrings = 1 << 16

// enum reads an ENUM_* table (id → name) when the export has it.
func (l *loader) enum(table string) map[int64]string {
	if l.enums == nil {
		l.enums = map[string]map[int64]string{}
	}
	if m, ok := l.enums[table]; ok {
		return m
	}
	m := map[int64]string{}
	l.enums[table] = m
	if !l.tables[table] {
		return m
	}
	// enum tables have a few dozen rows; a hostile one is cut short
	rows, err := l.db.QueryContext(l.ctx, `SELECT `+Bounded("[id]")+`, substr(`+Bounded("[name]")+`, 1, 256) FROM `+table+` LIMIT 4096`)
	if err != nil {
		return m
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var n string
		if rows.Scan(&id, &n) == nil {
			m[id] = n
		}
	}
	return m
}

func (l *loader) gpus() error {
	l.devName = map[int64]string{}
	// names cut and rows bounded as in the Kineto reader's deviceProperties
	rows, err := l.db.QueryContext(l.ctx, `SELECT `+Bounded("[id]")+`, substr(`+Bounded("[name]")+`, 1, 256) FROM TARGET_INFO_GPU LIMIT 1024`)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var n sql.NullString
		if err := rows.Scan(&id, &n); err != nil {
			return err
		}
		l.devName[id] = n.String
	}
	return rows.Err()
}

func (l *loader) rank(dev int64) *timeline.Rank {
	r := l.ranks[dev]
	if r == nil {
		r = &timeline.Rank{Rank: int(dev), Device: l.devName[dev]}
		l.ranks[dev] = r
	}
	return r
}

// corrKey makes a correlation id unique across processes: CUPTI numbers them per process.
func (l *loader) corrKey(globalID, corr int64) int64 {
	pid := globalID >> 24 // globalTid/globalPid: bits 24+ identify the process
	idx, ok := l.pidIdx[pid]
	if !ok {
		idx = int64(len(l.pidIdx))
		l.pidIdx[pid] = idx
	}
	return idx<<40 | (corr & (1<<40 - 1))
}

func (l *loader) addOp(dev, pid int64, op timeline.Op) {
	r := l.rank(dev)
	r.GPU = append(r.GPU, op)
	l.corrDev[op.Corr] = dev
	p := pid >> 24
	if l.pidDev[p] == nil {
		l.pidDev[p] = map[int64]int{}
	}
	l.pidDev[p][dev]++
}

func (l *loader) kernels() error {
	rows, err := l.db.QueryContext(l.ctx, `SELECT `+BoundedList("start", "end", "deviceId", "streamId", "correlationId", "globalPid", "demangledName", "shortName")+` FROM CUPTI_ACTIVITY_KIND_KERNEL`)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var start, end, dev, stream, corr, pid int64
		var dn, sn sql.NullInt64
		if err := rows.Scan(&start, &end, &dev, &stream, &corr, &pid, &dn, &sn); err != nil {
			return err
		}
		if l.malformed("CUPTI_ACTIVITY_KIND_KERNEL", start, end) {
			continue
		}
		name := l.lookup(dn.Int64)
		if !dn.Valid || name == "" {
			name = l.lookup(sn.Int64)
		}
		l.addOp(dev, pid, timeline.Op{Start: start, End: end, Corr: l.corrKey(pid, corr), Name: l.names.IDString(name),
			Stream: int32(stream), Kind: timeline.OpKernel})
	}
	return rows.Err()
}

// nsysMemcpyOper and nsysMemKind are the export's ENUM_CUDA_MEMCPY_OPER and
// ENUM_CUDA_MEM_KIND as nsys 2024.5 writes them (a100x4-cloverleaf.sqlite); used when an
// export lacks those tables, so a copy is still named by its kind.
var (
	nsysMemcpyOper = map[int64]string{0: "CUDA_MEMCPY_KIND_UNKNOWN", 1: "CUDA_MEMCPY_KIND_HTOD", 2: "CUDA_MEMCPY_KIND_DTOH",
		3: "CUDA_MEMCPY_KIND_HTOA", 4: "CUDA_MEMCPY_KIND_ATOH", 5: "CUDA_MEMCPY_KIND_ATOA", 6: "CUDA_MEMCPY_KIND_ATOD",
		7: "CUDA_MEMCPY_KIND_DTOA", 8: "CUDA_MEMCPY_KIND_DTOD", 9: "CUDA_MEMCPY_KIND_HTOH", 10: "CUDA_MEMCPY_KIND_PTOP",
		11: "CUDA_MEMCPY_KIND_UVM_HTOD", 12: "CUDA_MEMCPY_KIND_UVM_DTOH", 13: "CUDA_MEMCPY_KIND_UVM_DTOD"}
	nsysMemKind = map[int64]string{0: "CUDA_MEMOPR_MEMORY_KIND_PAGEABLE", 1: "CUDA_MEMOPR_MEMORY_KIND_PINNED",
		2: "CUDA_MEMOPR_MEMORY_KIND_DEVICE", 3: "CUDA_MEMOPR_MEMORY_KIND_ARRAY", 4: "CUDA_MEMOPR_MEMORY_KIND_MANAGED",
		5: "CUDA_MEMOPR_MEMORY_KIND_DEVICE_STATIC", 6: "CUDA_MEMOPR_MEMORY_KIND_MANAGED_STATIC",
		7: "CUDA_MEMOPR_MEMORY_KIND_UNKNOWN"}
)

// copyKindShort spells nsys's copy kinds as Kineto and nsys's own reports do ("HtoD").
var copyKindShort = map[string]string{"HTOD": "HtoD", "DTOH": "DtoH", "DTOD": "DtoD", "HTOH": "HtoH", "PTOP": "PtoP",
	"HTOA": "HtoA", "ATOH": "AtoH", "ATOA": "AtoA", "ATOD": "AtoD", "DTOA": "DtoA",
	"UVM_HTOD": "HtoD (unified)", "UVM_DTOH": "DtoH (unified)", "UVM_DTOD": "DtoD (unified)", "UNKNOWN": "Unknown"}

// memName builds Kineto's spelling ("Memcpy HtoD (Pageable -> Device)") so that HTA's
// name-based classification and the pageable check apply unchanged. The memory kinds are
// left out when the export does not record them (NULL srcKind/dstKind).
func memName(oper, src, dst string) string {
	k := oper
	if i := strings.LastIndex(oper, "KIND_"); i >= 0 {
		k = oper[i+5:]
	}
	if s, ok := copyKindShort[k]; ok {
		k = s
	}
	if k == "" {
		k = "Unknown"
	}
	label := func(s string) string {
		if i := strings.LastIndex(s, "KIND_"); i >= 0 {
			s = s[i+5:]
		}
		s = strings.ReplaceAll(s, "_", " ")
		if s == "" {
			return "Unknown"
		}
		return strings.ToUpper(s[:1]) + strings.ToLower(s[1:])
	}
	if src == "" || dst == "" {
		return "Memcpy " + k
	}
	return fmt.Sprintf("Memcpy %s (%s -> %s)", k, label(src), label(dst))
}

// enumOr is the export's ENUM table, or nsys's values when the export has none.
func (l *loader) enumOr(table string, fallback map[int64]string) map[int64]string {
	if m := l.enum(table); len(m) > 0 {
		return m
	}
	return fallback
}

func (l *loader) memcpys() error {
	oper := l.enumOr("ENUM_CUDA_MEMCPY_OPER", nsysMemcpyOper)
	kinds := l.enumOr("ENUM_CUDA_MEM_KIND", nsysMemKind)
	pageable := int64(-1)
	for id, n := range kinds {
		if strings.HasSuffix(n, "PAGEABLE") {
			pageable = id
		}
	}
	rows, err := l.db.QueryContext(l.ctx, `SELECT `+BoundedList("start", "end", "deviceId", "streamId", "correlationId", "globalPid", "copyKind", "srcKind", "dstKind")+` FROM CUPTI_ACTIVITY_KIND_MEMCPY`)
	if err != nil {
		return err
	}
	defer rows.Close()
	kind := func(v sql.NullInt64) string {
		if !v.Valid {
			return ""
		}
		return kinds[v.Int64]
	}
	for rows.Next() {
		var start, end, dev, stream, corr, pid int64
		var ck, sk, dk sql.NullInt64
		if err := rows.Scan(&start, &end, &dev, &stream, &corr, &pid, &ck, &sk, &dk); err != nil {
			return err
		}
		if l.malformed("CUPTI_ACTIVITY_KIND_MEMCPY", start, end) {
			continue
		}
		op := timeline.Op{Start: start, End: end, Corr: l.corrKey(pid, corr), Stream: int32(stream), Kind: timeline.OpMemcpy,
			Name: l.names.IDString(memName(oper[ck.Int64], kind(sk), kind(dk)))}
		if (sk.Valid && sk.Int64 == pageable) || (dk.Valid && dk.Int64 == pageable) {
			op.Flags |= timeline.OpPageable
		}
		l.addOp(dev, pid, op)
	}
	return rows.Err()
}

func (l *loader) memsets() error {
	rows, err := l.db.QueryContext(l.ctx, `SELECT `+BoundedList("start", "end", "deviceId", "streamId", "correlationId", "globalPid")+` FROM CUPTI_ACTIVITY_KIND_MEMSET`)
	if err != nil {
		return err
	}
	defer rows.Close()
	name := l.names.IDString("Memset (Device)")
	for rows.Next() {
		var start, end, dev, stream, corr, pid int64
		if err := rows.Scan(&start, &end, &dev, &stream, &corr, &pid); err != nil {
			return err
		}
		if l.malformed("CUPTI_ACTIVITY_KIND_MEMSET", start, end) {
			continue
		}
		l.addOp(dev, pid, timeline.Op{Start: start, End: end, Corr: l.corrKey(pid, corr), Stream: int32(stream), Kind: timeline.OpMemset, Name: name})
	}
	return rows.Err()
}

func (l *loader) syncs() error {
	types := l.enum("ENUM_CUPTI_SYNC_TYPE")
	rows, err := l.db.QueryContext(l.ctx, `SELECT `+BoundedList("start", "end", "deviceId", "streamId", "correlationId", "globalPid", "syncType")+` FROM CUPTI_ACTIVITY_KIND_SYNCHRONIZATION`)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var start, end, dev, stream, corr, pid int64
		var st sql.NullInt64
		if err := rows.Scan(&start, &end, &dev, &stream, &corr, &pid, &st); err != nil {
			return err
		}
		if l.malformed("CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", start, end) {
			continue
		}
		n := types[st.Int64]
		if i := strings.LastIndex(n, "TYPE_"); i >= 0 {
			n = n[i+5:]
		}
		// Kineto's spelling: "Stream Sync", "Event Sync", "Context Sync"
		n = strings.ReplaceAll(titleASCII(strings.ToLower(strings.ReplaceAll(n, "_", " "))), "Synchronize", "Sync")
		if n == "" {
			n = "Sync"
		}
		op := timeline.Op{Start: start, End: end, Corr: l.corrKey(pid, corr), Stream: int32(stream), Kind: timeline.OpSync, Name: l.names.IDString(n)}
		r := l.rank(dev)
		if stream < 0 {
			r.DeviceSyncs = append(r.DeviceSyncs, op)
			continue
		}
		// noStream (uint32 −1) becomes int32 −1, the same record Kineto writes as
		// "stream": 4294967295 and HTA counts among the GPU events
		r.GPU = append(r.GPU, op)
	}
	return rows.Err()
}

func (l *loader) runtime() error {
	rows, err := l.db.QueryContext(l.ctx, `SELECT `+BoundedList("start", "end", "globalTid", "correlationId", "nameId")+` FROM CUPTI_ACTIVITY_KIND_RUNTIME`)
	if err != nil {
		return err
	}
	defer rows.Close()
	flags := map[int64]uint16{}
	ids := map[int64]uint32{}
	type pending struct {
		c   timeline.Call
		pid int64
	}
	var unmatched []pending
	for rows.Next() {
		var start, end, tid, corr, nameID int64
		if err := rows.Scan(&start, &end, &tid, &corr, &nameID); err != nil {
			return err
		}
		if l.malformed("CUPTI_ACTIVITY_KIND_RUNTIME", start, end) {
			continue
		}
		id, ok := ids[nameID]
		if !ok {
			canon := timeline.CanonicalAPI(l.lookup(nameID))
			id = l.names.IDString(canon)
			ids[nameID] = id
			flags[nameID] = timeline.ClassifyCall(canon)
		}
		c := timeline.Call{Start: start, End: end, Corr: l.corrKey(tid, corr), Name: id, Flags: flags[nameID], Thread: l.threads.Index(tid)}
		if dev, ok := l.corrDev[c.Corr]; ok {
			r := l.rank(dev)
			r.Calls = append(r.Calls, c)
			noteCPU(r, start)
			continue
		}
		unmatched = append(unmatched, pending{c, tid >> 24})
	}
	if err := rows.Err(); err != nil {
		return err
	}
	// calls with no GPU work (synchronization, allocation) go to the process's busiest device
	for _, p := range unmatched {
		dev, best := int64(-1), -1
		for d, n := range l.pidDev[p.pid] {
			if n > best || (n == best && d < dev) {
				dev, best = d, n
			}
		}
		if dev < 0 {
			continue
		}
		r := l.rank(dev)
		r.Calls = append(r.Calls, p.c)
		noteCPU(r, p.c.Start)
	}
	for _, r := range l.ranks {
		sort.SliceStable(r.Calls, func(i, j int) bool { return r.Calls[i].Start < r.Calls[j].Start })
	}
	return nil
}

func noteCPU(r *timeline.Rank, start int64) {
	if !r.HasCPU || start < r.MinCPUStart {
		r.MinCPUStart, r.HasCPU = start, true
	}
}

// titleASCII upper-cases the first letter of each word of an ASCII enum name, a word being a
// run of letters, digits and underscores (strings.Title's boundaries, for ASCII).
func titleASCII(s string) string {
	b := []byte(s)
	word := false
	for i, c := range b {
		alnum := c == '_' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
		if alnum && !word && 'a' <= c && c <= 'z' {
			b[i] = c - 'a' + 'A'
		}
		word = alnum
	}
	return string(b)
}
