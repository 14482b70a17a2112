// Package pack writes an evidence package: a run directory (or a sweep of them) as a
// .tar.gz that is safe to hand to another team. Every file is rewritten by a rewriter that
// knows its format, with the identifiers pel recorded replaced by stable pseudonyms
// (package redact): host names, IP addresses and ports, request/trace/span ids, paths,
// user names, process names, GPU UUIDs and, unless asked, prompt hashes; prompt and output
// text is removed. A profiler trace kept in the run directory (or its profile/ directory)
// is redacted as pel trace --redact does and renamed to the pseudonym its evidence names.
// A file no rewriter knows is left out and listed, never copied.
//
// The small documents are rewritten first, so the hosts, paths and ids they name are known
// when the records' free text is rewritten. Then every rewritten file is searched for every
// original replaced; when one is found (an original learnt only after an earlier file was
// written) the directory is rewritten once more with everything learnt, and an original
// found again is an error: nothing is written. report.html and sweep.html are rendered
// again from the rewritten evidence.json and sweep.json, so they say what the package says
// (and are not searched: they are a function of searched files alone, and their own words,
// such as "engine", are not originals). The manifest (MANIFEST.json in the archive) lists each file
// with its rewriter, each kind of value replaced or removed with counts, and each file left
// out; it never holds an original.
//
// Unpacking the archive gives a run directory that pel analyze reads as it read the
// original, and its verdict is the same: the ids keep their shape and their joins, the
// numbers are untouched. One caveat is stated in the manifest: a run larger than the
// analysis sample (stats.DefaultSampleBytes per phase) samples its tasks by a hash of
// their ids, so its bootstrap intervals may differ in the last digits.
package pack

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/pel-ladder/pel/canary"
	"github.com/pel-ladder/pel/contract"
	"github.com/pel-ladder/pel/internal/badinput"
	"github.com/pel-ladder/pel/internal/ctxio"
	"github.com/pel-ladder/pel/internal/safefile"
	"github.com/pel-ladder/pel/record"
	"github.com/pel-ladder/pel/redact"
	"github.com/pel-ladder/pel/report"
	"github.com/pel-ladder/pel/rundir"
	"github.com/pel-ladder/pel/sweep"
)

// ErrBadInput marks a directory that cannot be packed as given (exit 2): the program's one
// bad-input kind.
var ErrBadInput = badinput.ErrBadInput

func bad(format string, a ...any) error { return badinput.Errorf(format, a...) }

// ErrLeak is returned when a rewritten file still holds an original: nothing is written.
var ErrLeak = redact.ErrLeak

// ManifestFile is the manifest's name inside the archive.
const ManifestFile = "MANIFEST.json"

// Root is the directory every file of the archive lies under (the original directory's
// name is not kept: it may name a host or a person).
const Root = "pel-pack"

// Bounds on what packing reads.
const (
	// MaxEntries bounds the entries of one directory.
	MaxEntries = 4096
	// MaxJSONBytes bounds a whole-document JSON file (evidence.json, sweep.json, canary.json).
	MaxJSONBytes = 256 << 20
	// MaxCSVBytes bounds a CSV file, MaxCSVLine one of its lines (encoding/csv holds a
	// record whole).
	MaxCSVBytes = 4 << 30
	MaxCSVLine  = 64 << 20
)

// Options tune Pack.
type Options struct {
	// Context stops packing once done (Ctrl-C): nothing is written, the temporary files go.
	Context context.Context
	// KeepPromptHashes keeps prompt_sha256 as recorded.
	KeepPromptHashes bool
	// Force replaces an existing output file.
	Force bool
}

// Manifest is MANIFEST.json.
type Manifest struct {
	Format     string         `json:"format"`
	Pseudonyms string         `json:"pseudonyms"`
	Values     []redact.Count `json:"values"`
	Files      []FileEntry    `json:"files"`
	LeftOut    []LeftOut      `json:"left_out,omitempty"`
	Kept       []string       `json:"kept"`
	Verified   string         `json:"verified"`
	Notes      []string       `json:"notes,omitempty"`
}

// FileEntry is one file of the package.
type FileEntry struct {
	Name     string `json:"name"`
	Rewriter string `json:"rewriter"`
	Bytes    int64  `json:"bytes"`
}

// LeftOut is a file of the directory that is not in the package. Its name is a pseudonym
// (a file's name may itself identify someone).
type LeftOut struct {
	Name   string `json:"name"`
	Reason string `json:"reason"`
}

// Result is what Pack did, for the command's summary.
type Result struct {
	Manifest *Manifest
	// LeftOutNames are the original names of the files left out (printed, never packed).
	LeftOutNames []string
	// Passes is how many times the files were rewritten (2: an original was learnt late).
	Passes int
}

type rewriter struct {
	name string
	fn   func(p *packer, src, dst string) error
}

// rewriters by file name; CSV files by extension.
var rewriters = map[string]rewriter{
	rundir.ContractFile:       {"contract (YAML: paths and free text)", (*packer).contract},
	rundir.RequestsFile:       {"records (JSON lines: ids, prompt hashes, text removed)", (*packer).records},
	rundir.SpansFile:          {"OTLP spans (JSON lines: trace/span/request ids)", (*packer).spans},
	rundir.MetricsFile:        {"metrics samples (JSON lines: endpoints, host/GPU labels)", (*packer).metrics},
	canary.MetricsFile:        {"metrics samples (JSON lines: endpoints, host/GPU labels)", (*packer).metrics},
	rundir.EvidenceFile:       {"evidence (JSON)", (*packer).jsonDoc},
	canary.EvidenceFile:       {"evidence (JSON)", (*packer).jsonDoc},
	canary.LogFile:            {"canary log (JSON)", (*packer).jsonDoc},
	sweep.ResultFile:          {"sweep result (JSON)", (*packer).jsonDoc},
	rundir.ReportFile:         {"report (rendered again from the rewritten evidence.json)", nil},
	sweep.HTMLFile:            {"sweep page (rendered again from the rewritten sweep.json)", nil},
	report.TasksCSVFile:       {"CSV (cells)", (*packer).csvFile},
	report.SummaryCSVFile:     {"CSV (cells)", (*packer).csvFile},
	report.PercentilesCSVFile: {"CSV (cells)", (*packer).csvFile},
	sweep.CSVFile:             {"CSV (cells)", (*packer).csvFile},
}

// traceRewriter redacts a profiler trace kept in the run directory, as pel trace --redact.
var traceRewriter = rewriter{"profiler trace (as pel trace --redact)", (*packer).trace}

// isTraceName: a Kineto trace (NAME.trace.json, NAME.pt.trace.json, .gz or not) or an
// Nsight Systems SQLite export (NAME.sqlite), as profilers name them.
func isTraceName(n string) bool {
	n = strings.TrimSuffix(n, ".gz")
	return strings.HasSuffix(n, ".trace.json") || strings.HasSuffix(n, ".sqlite")
}

func (p *packer) trace(src, dst string) error {
	f, err := safefile.Open(src)
	if err != nil {
		return bad("%v", err)
	}
	defer f.Close()
	head := make([]byte, 16)
	n, _ := io.ReadFull(f, head)
	if redact.IsSQLite(head[:n]) {
		f.Close()
		if _, err := p.r.Nsys(src, dst); err != nil {
			return bad("%s: %v", src, err)
		}
		return nil
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	return p.out(dst, func(w *bufio.Writer) error {
		if err := p.r.Kineto(f, w, strings.HasSuffix(dst, ".gz")); err != nil {
			return bad("%s: %v", src, err)
		}
		return nil
	})
}

type packer struct {
	r   *redact.Redactor
	tmp string // where the rewritten files go
	// torn counts cut last lines left out.
	torn int
	// shas maps the sha256 of each contract whose paths were replaced to its rewritten
	// contract's: the documents then name the contract they travel with.
	shas map[string]string
}

type job struct {
	rel, src string
	rw       rewriter
}

// Pack writes dir as the evidence package out (a .tar.gz), atomically through safefile.
// A stop of o.Context ends it with redact.ErrInterrupted (wrapping the context's error), out
// left as it was.
func Pack(dir, out string, o Options) (_ *Result, err error) {
	ctx := o.Context
	if ctx == nil {
		ctx = context.Background()
	}
	defer func() {
		if err != nil && ctx.Err() != nil {
			err = fmt.Errorf("%w: %w", redact.ErrInterrupted, ctx.Err())
		}
	}()
	if err := safefile.Check(out, o.Force); err != nil {
		return nil, err
	}
	if ok, err := isRunOrSweep(dir); err != nil {
		return nil, err
	} else if !ok {
		return nil, bad("%s is not a pel run directory (no %s) nor a sweep directory (no %s)", dir, rundir.ContractFile, sweep.ResultFile)
	}
	var jobs []job
	res := &Result{Manifest: &Manifest{Format: "pel-pack/1", Pseudonyms: redact.Scheme}}
	rd := redact.New()
	rd.KeepPromptHashes = o.KeepPromptHashes
	rd.SetContext(ctx)
	if err := collect(dir, "", 0, &jobs, res, rd); err != nil {
		return nil, err
	}
	// Small documents first: the hosts, paths and ids they name are then known when the
	// records' free text is rewritten.
	sort.SliceStable(jobs, func(i, j int) bool { return order(jobs[i].rel) < order(jobs[j].rel) })
	tmp, err := os.MkdirTemp("", "pel-pack-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	var p *packer
	var leak error
	// One pass writes; a second is needed only when the first learnt an original (a host in
	// a later file's label) after it had written an earlier file's free text.
	for pass := 1; pass <= 2; pass++ {
		rd.ResetCounts()
		res.Passes = pass
		dir := filepath.Join(tmp, fmt.Sprint(pass))
		p = &packer{r: rd, tmp: dir}
		leftOut := len(res.Manifest.LeftOut)
		if leak, err = p.write(jobs, res); err != nil {
			return nil, err
		}
		if leak == nil {
			tmp = dir
			break
		}
		res.Manifest.LeftOut = res.Manifest.LeftOut[:leftOut]
		res.LeftOutNames = res.LeftOutNames[:leftOut]
		os.RemoveAll(dir)
	}
	if leak != nil {
		return nil, leak
	}
	m := res.Manifest
	for _, j := range jobs {
		dst := filepath.Join(tmp, filepath.FromSlash(j.rel))
		st, err := os.Lstat(dst)
		if err != nil {
			continue
		}
		m.Files = append(m.Files, FileEntry{Name: j.rel, Rewriter: j.rw.name, Bytes: st.Size()})
	}
	m.Values = rd.Counts()
	m.Kept = []string{
		"timestamps, durations, token counts and every number pel measured or computed",
		"task names, phases, statuses, error classes and finish reasons",
		"the model name the server reported, metric names, kernel names, GPU model names",
		"the contract, except the paths it names",
	}
	if o.KeepPromptHashes {
		m.Kept = append(m.Kept, "prompt_sha256 as recorded (--keep-prompt-hashes)")
	}
	m.Verified = "every rewritten file was searched for every original value replaced above; none remains (the HTML pages are rendered from those files alone)"
	m.Notes = append(m.Notes, "pel analyze on the unpacked directory gives the same verdict; a run larger than the analysis sample samples tasks by a hash of their ids, so its bootstrap intervals may differ in the last digits")
	if len(p.shas) > 0 {
		m.Notes = append(m.Notes, "a contract named file-system paths: they are replaced, so its sha256 is the rewritten contract's, not the one the original run recorded")
	}
	if p.torn > 0 {
		m.Notes = append(m.Notes, fmt.Sprintf("%d cut last line(s) of a JSON-lines file (a writer stopped mid-line) left out", p.torn))
	}
	sort.Slice(m.LeftOut, func(i, j int) bool { return m.LeftOut[i].Name < m.LeftOut[j].Name })
	mb, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, err
	}
	if leaks := rd.Check(string(mb)); len(leaks) > 0 {
		return nil, fmt.Errorf("%w: %s (nothing written)", ErrLeak, ManifestFile)
	}
	err = safefile.Write(out, o.Force, func(w io.Writer) error { return writeTar(ctx, w, tmp, m.Files, mb) })
	if err != nil {
		return nil, err
	}
	return res, nil
}

// write rewrites every job's file under p.tmp and then searches them for the originals: a
// file still holding one is returned as the leak (ErrLeak).
func (p *packer) write(jobs []job, res *Result) (leak error, err error) {
	for _, j := range jobs {
		if err := p.r.Stopped(); err != nil {
			return nil, err
		}
		dst := filepath.Join(p.tmp, filepath.FromSlash(j.rel))
		if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
			return nil, err
		}
		if j.rw.fn == nil {
			continue
		}
		if err := j.rw.fn(p, j.src, dst); err != nil {
			return nil, err
		}
	}
	// Rendered pages last: they read the rewritten documents.
	for _, j := range jobs {
		if j.rw.fn != nil {
			continue
		}
		dst := filepath.Join(p.tmp, filepath.FromSlash(j.rel))
		ok, err := render(filepath.Base(j.rel), filepath.Dir(dst), dst)
		if err != nil {
			return nil, err
		}
		if !ok {
			res.Manifest.LeftOut = append(res.Manifest.LeftOut, LeftOut{Name: p.r.Path(j.rel), Reason: "a rendered page whose source document is not in the directory"})
			res.LeftOutNames = append(res.LeftOutNames, j.rel)
		}
	}
	for _, j := range jobs {
		dst := filepath.Join(p.tmp, filepath.FromSlash(j.rel))
		if _, err := os.Lstat(dst); err != nil || j.rw.fn == nil {
			// A rendered page is a function of its document alone, which is searched: its
			// own words (a host named "worker" is in the template) are not originals.
			continue
		}
		check := redact.CheckFile
		if strings.HasSuffix(dst, ".gz") {
			check = redact.CheckGzipFile
		}
		leaks, err := check(p.r, dst)
		if err != nil {
			return nil, err
		}
		if len(leaks) > 0 {
			var kinds []string
			for _, l := range leaks {
				kinds = append(kinds, fmt.Sprintf("%s at byte %d", l.Kind, l.Offset))
			}
			return fmt.Errorf("%w: %s: %s (nothing written)", ErrLeak, j.rel, strings.Join(kinds, ", ")), nil
		}
	}
	return nil, nil
}

// order ranks a file for rewriting: documents naming the run's hosts and paths first,
// the records (the largest file, mostly free of them) last.
func order(rel string) int {
	switch path.Base(rel) {
	case rundir.ContractFile:
		return 0
	case rundir.EvidenceFile, canary.EvidenceFile, canary.LogFile, sweep.ResultFile:
		return 1
	case rundir.MetricsFile, canary.MetricsFile:
		return 2
	case rundir.SpansFile:
		return 3
	case rundir.RequestsFile:
		return 5
	}
	return 4
}

// isRunOrSweep: dir holds contract.yaml (a run) or sweep.json (a sweep), each a regular file.
func isRunOrSweep(dir string) (bool, error) {
	st, err := os.Lstat(dir)
	if err != nil {
		return false, bad("%v", err)
	}
	if st.Mode()&fs.ModeSymlink != 0 {
		return false, bad("%s is a symbolic link: give the directory itself", dir)
	}
	if !st.IsDir() {
		return false, bad("%s is not a directory", dir)
	}
	for _, n := range []string{rundir.ContractFile, sweep.ResultFile} {
		ok, err := safefile.Regular(filepath.Join(dir, n))
		if err != nil {
			return false, bad("%v", err)
		}
		if ok {
			return true, nil
		}
	}
	return false, nil
}

// collect lists dir's files with their rewriters; a run directory inside a sweep is
// descended into (one level).
func collect(dir, rel string, depth int, jobs *[]job, res *Result, rd *redact.Redactor) error {
	ents, err := readDir(dir)
	if err != nil {
		return err
	}
	leave := func(name, why string) {
		res.Manifest.LeftOut = append(res.Manifest.LeftOut, LeftOut{Name: rd.Path(name), Reason: why})
		res.LeftOutNames = append(res.LeftOutNames, name)
	}
	for _, e := range ents {
		name := path.Join(rel, e.Name())
		src := filepath.Join(dir, e.Name())
		st, err := os.Lstat(src)
		if err != nil {
			return bad("%v", err)
		}
		switch {
		case st.Mode()&fs.ModeSymlink != 0:
			leave(name, "a symbolic link (never followed)")
		case st.IsDir():
			if isRun(src) && depth == 0 && validName(e.Name()) {
				if err := collect(src, name, depth+1, jobs, res, rd); err != nil {
					return err
				}
				continue
			}
			if isRun(dir) && depth <= 1 && !isRun(src) {
				sub := e.Name()
				if !traceDirs[sub] {
					sub = rd.Path(sub)
				}
				if err := collectTraces(src, path.Join(rel, sub), name, jobs, leave, rd); err != nil {
					return err
				}
				continue
			}
			leave(name, "a directory that is not a run directory of this sweep")
		case !st.Mode().IsRegular():
			leave(name, "not a regular file")
		case strings.HasPrefix(e.Name(), ".") && strings.Contains(e.Name(), ".tmp-"):
			leave(name, "a temporary file of an interrupted write")
		case isTraceName(e.Name()):
			// The name goes too (it is often the host's): the evidence names the trace by
			// its base name, rewritten to the same pseudonym.
			*jobs = append(*jobs, job{rel: path.Join(rel, rd.Path(e.Name())), src: src, rw: traceRewriter})
		default:
			rw, ok := rewriters[e.Name()]
			if !ok {
				leave(name, "no rewriter knows this file: it is never copied as it is")
				continue
			}
			*jobs = append(*jobs, job{rel: name, src: src, rw: rw})
		}
	}
	return nil
}

// readDir lists dir sorted by name, refusing more than MaxEntries entries (a pel run
// directory holds a handful; a sweep one per point).
func readDir(dir string) ([]fs.DirEntry, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, bad("%v", err)
	}
	ents, err := f.ReadDir(MaxEntries + 1)
	f.Close()
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, bad("%s: %v", dir, err)
	}
	if len(ents) > MaxEntries {
		return nil, bad("%s: more than %d entries: not a pel run directory or its trace directory", dir, MaxEntries)
	}
	sort.Slice(ents, func(i, j int) bool { return ents[i].Name() < ents[j].Name() })
	return ents, nil
}

// traceDirs are the names of a run's trace directories kept as they are; any other
// directory's name becomes a pseudonym (it may be a host's).
var traceDirs = map[string]bool{"profile": true, "profiles": true, "trace": true, "traces": true}

// isRun: dir holds a contract, as every run directory (and a sweep's point) does.
func isRun(dir string) bool {
	ok, _ := safefile.Regular(filepath.Join(dir, rundir.ContractFile))
	return ok
}

// collectTraces takes the profiler traces of a run's subdirectory (one level); anything
// else in it is left out.
func collectTraces(dir, rel, shown string, jobs *[]job, leave func(name, why string), rd *redact.Redactor) error {
	ents, err := readDir(dir)
	if err != nil {
		return err
	}
	for _, e := range ents {
		name := path.Join(shown, e.Name())
		st, err := os.Lstat(filepath.Join(dir, e.Name()))
		switch {
		case err != nil:
			return bad("%v", err)
		case st.Mode().IsRegular() && isTraceName(e.Name()):
			*jobs = append(*jobs, job{rel: path.Join(rel, rd.Path(e.Name())), src: filepath.Join(dir, e.Name()), rw: traceRewriter})
		default:
			leave(name, "not a profiler trace, in a run's trace directory")
		}
	}
	return nil
}

// validName: a sweep point's directory name as pel makes them (c1, r2.5, point names):
// kept in the archive, so it must not look like a path or carry odd characters.
func validName(n string) bool {
	if n == "" || len(n) > 64 {
		return false
	}
	for i := 0; i < len(n); i++ {
		c := n[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return n != "." && n != ".."
}

// out creates dst for a rewritten file.
func (p *packer) out(dst string, write func(w *bufio.Writer) error) error {
	f, err := safefile.Create(dst)
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(f, 256<<10)
	if err := write(bw); err != nil {
		f.Close()
		return err
	}
	if err := bw.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

var (
	idKeys      = []string{"id", "trace_id", "span_id", "parent_span_id", "request_id"}
	recordRules = &redact.Rules{IDs: idKeys, Drop: []string{"prompt", "output"}}
	spanRules   = &redact.Rules{IDs: idKeys}
	docRules    = &redact.Rules{HexIDs: idKeys}
)

func (p *packer) records(src, dst string) error {
	return p.jsonLines(src, dst, recordRules, record.MaxLine)
}
func (p *packer) spans(src, dst string) error {
	return p.jsonLines(src, dst, spanRules, rundir.MaxJSONLine)
}
func (p *packer) metrics(src, dst string) error {
	return p.jsonLines(src, dst, docRules, rundir.MaxJSONLine)
}

// jsonLines rewrites a JSON-lines file line by line, holding one line (at most max bytes).
// A cut last line (the writer stopped mid-line) is left out, as the readers skip it.
func (p *packer) jsonLines(src, dst string, rules *redact.Rules, max int) error {
	f, err := safefile.Open(src)
	if err != nil {
		return bad("%v", err)
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 256<<10)
	return p.out(dst, func(w *bufio.Writer) error {
		var long []byte
		for line := 1; ; line++ {
			if line%4096 == 0 {
				if err := p.r.Stopped(); err != nil {
					return err
				}
			}
			b, rerr := br.ReadSlice('\n')
			if rerr == bufio.ErrBufferFull {
				long = append(long[:0], b...)
				for rerr == bufio.ErrBufferFull && len(long) <= max {
					b, rerr = br.ReadSlice('\n')
					long = append(long, b...)
				}
				if len(long) > max {
					return bad("%s:%d: line longer than %d MiB", src, line, max>>20)
				}
				b = long
			}
			if rerr != nil && rerr != io.EOF {
				return fmt.Errorf("%s: %w", src, rerr)
			}
			if t := bytes.TrimSpace(b); len(t) > 0 {
				nb, err := p.r.Line(t, rules)
				if err != nil {
					if rerr == io.EOF && b[len(b)-1] != '\n' {
						p.torn++
						return nil
					}
					return bad("%s:%d: %v", src, line, err)
				}
				w.Write(nb)
				w.WriteByte('\n')
			}
			if rerr == io.EOF {
				return nil
			}
		}
	})
}

// jsonDoc rewrites a whole JSON document (evidence, a sweep result, a canary log), indented
// as pel writes them.
func (p *packer) jsonDoc(src, dst string) error {
	f, err := safefile.Open(src)
	if err != nil {
		return bad("%v", err)
	}
	defer f.Close()
	dec := json.NewDecoder(io.LimitReader(f, MaxJSONBytes+1))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return bad("%s: %v", src, err)
	}
	if dec.InputOffset() > MaxJSONBytes {
		return bad("%s: larger than %d MiB", src, MaxJSONBytes>>20)
	}
	v = p.r.JSON(v, docRules)
	b, err := redact.Marshal(v, "  ")
	if err != nil {
		return err
	}
	for old, sha := range p.shas {
		b = bytes.ReplaceAll(b, []byte(old), []byte(sha))
	}
	return p.out(dst, func(w *bufio.Writer) error {
		w.Write(b)
		return w.WriteByte('\n')
	})
}

// csvFile rewrites every cell; the id columns get id pseudonyms.
func (p *packer) csvFile(src, dst string) error {
	f, err := safefile.Open(src)
	if err != nil {
		return bad("%v", err)
	}
	defer f.Close()
	cr := csv.NewReader(&lineLimit{r: bufio.NewReader(io.LimitReader(f, MaxCSVBytes)), max: MaxCSVLine})
	cr.FieldsPerRecord = -1
	cr.ReuseRecord = true
	return p.out(dst, func(w *bufio.Writer) error {
		cw := csv.NewWriter(w)
		var head []string
		for row := 0; ; row++ {
			if row%4096 == 0 {
				if err := p.r.Stopped(); err != nil {
					return err
				}
			}
			rec, err := cr.Read()
			if err == io.EOF {
				break
			}
			if err != nil {
				return bad("%s: %v", src, err)
			}
			if row == 0 {
				head = append([]string(nil), rec...)
				cw.Write(rec)
				continue
			}
			for i, c := range rec {
				col := ""
				if i < len(head) {
					col = strings.ToLower(head[i])
				}
				switch col {
				case "id", "trace_id", "request_id", "span_id":
					rec[i] = p.r.ID(c)
				case "prompt_sha256":
					rec[i] = p.r.PromptHash(c)
				default:
					rec[i] = p.r.Text(c)
				}
			}
			cw.Write(rec)
		}
		cw.Flush()
		return cw.Error()
	})
}

// lineLimit fails a read once more than max bytes came without a newline.
type lineLimit struct {
	r     io.Reader
	max   int
	since int
}

func (l *lineLimit) Read(p []byte) (int, error) {
	n, err := l.r.Read(p)
	for _, c := range p[:n] {
		if c == '\n' {
			l.since = 0
		} else if l.since++; l.since > l.max {
			return 0, fmt.Errorf("a line longer than %d MiB", l.max>>20)
		}
	}
	return n, err
}

// contract rewrites the paths a contract names (a dataset, a replay trace) and any
// identifier in its text. A contract that holds none is copied byte for byte (its hash is
// then the one evidence.json records).
func (p *packer) contract(src, dst string) error {
	f, err := safefile.Open(src)
	if err != nil {
		return bad("%v", err)
	}
	raw, err := io.ReadAll(io.LimitReader(f, contract.MaxFileSize+1))
	f.Close()
	if err != nil {
		return err
	}
	if len(raw) > contract.MaxFileSize {
		return bad("%s: larger than %d bytes", src, contract.MaxFileSize)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		return bad("%s: %v", src, err)
	}
	changed := p.yamlNode(&doc, "")
	out := raw
	if changed {
		var b bytes.Buffer
		enc := yaml.NewEncoder(&b)
		enc.SetIndent(2)
		if err := enc.Encode(&doc); err != nil {
			return err
		}
		out = b.Bytes()
		before, err1 := contract.Parse(raw, src)
		after, err2 := contract.Parse(out, src)
		if err1 == nil && err2 == nil {
			if p.shas == nil {
				p.shas = map[string]string{}
			}
			p.shas[before.SHA256()] = after.SHA256()
		}
	}
	return p.out(dst, func(w *bufio.Writer) error {
		_, err := w.Write(out)
		return err
	})
}

func (p *packer) yamlNode(n *yaml.Node, key string) bool {
	changed := false
	switch n.Kind {
	case yaml.DocumentNode, yaml.SequenceNode:
		for _, c := range n.Content {
			changed = p.yamlNode(c, key) || changed
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			changed = p.yamlNode(n.Content[i+1], n.Content[i].Value) || changed
		}
	case yaml.ScalarNode:
		if n.Tag != "!!str" && n.Tag != "" {
			return false
		}
		var v string
		if key == "file" {
			v = p.r.Path(n.Value)
		} else {
			v = p.r.Text(n.Value)
		}
		if v != n.Value {
			n.Value = v
			return true
		}
	}
	return changed
}

// render writes a page again from the rewritten document beside it; false when the
// document is not there.
func render(name, dir, dst string) (bool, error) {
	switch name {
	case rundir.ReportFile:
		ev, err := rundir.ReadEvidence(filepath.Join(dir, rundir.EvidenceFile))
		if errors.Is(err, fs.ErrNotExist) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		return true, safefile.Write(dst, false, func(w io.Writer) error { return report.HTML(w, ev) })
	case sweep.HTMLFile:
		src := filepath.Join(dir, sweep.ResultFile)
		if ok, _ := safefile.Regular(src); !ok {
			return false, nil
		}
		r, err := sweep.ReadResult(src)
		if err != nil {
			return false, err
		}
		return true, safefile.Write(dst, false, func(w io.Writer) error { return report.SweepHTML(w, r) })
	}
	return false, nil
}

// epoch is every archive entry's time: the files' own times are in the records, and an
// archive made twice from one run differs only by its pseudonyms.
var epoch = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

func writeTar(ctx context.Context, w io.Writer, tmp string, files []FileEntry, manifest []byte) error {
	gz := gzip.NewWriter(w)
	tw := tar.NewWriter(gz)
	dirs := map[string]bool{}
	add := func(name string, size int64, body io.Reader) error {
		if d := path.Dir(name); d != "." && !dirs[d] {
			dirs[d] = true
			if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: Root + "/" + d + "/", Mode: 0o700, ModTime: epoch, Format: tar.FormatPAX}); err != nil {
				return err
			}
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: Root + "/" + name, Size: size, Mode: 0o600, ModTime: epoch, Format: tar.FormatPAX}); err != nil {
			return err
		}
		_, err := io.Copy(tw, ctxio.Reader(ctx, body))
		return err
	}
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: Root + "/", Mode: 0o700, ModTime: epoch, Format: tar.FormatPAX}); err != nil {
		return err
	}
	if err := add(ManifestFile, int64(len(manifest)), bytes.NewReader(manifest)); err != nil {
		return err
	}
	for _, fe := range files {
		f, err := safefile.Open(filepath.Join(tmp, filepath.FromSlash(fe.Name)))
		if err != nil {
			return err
		}
		err = add(fe.Name, fe.Bytes, io.LimitReader(f, fe.Bytes))
		f.Close()
		if err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return gz.Close()
}
