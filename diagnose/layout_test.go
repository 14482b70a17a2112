package diagnose

import (
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// layout is the package's file groups, in the order the data flows (doc.go): a file may use
// what its own group and the groups before it define, never what a later group defines.
var layout = [][]string{
	{"doc.go", "options.go", "confidence.go", "tasks.go", "view.go", "series.go", "impact.go",
		"objectives.go", "engine.go", "floors.go"},
	{"budget_task.go"},
	{"rule.go", "attribution.go", "config.go", "rules.go", "rules_client.go", "rules_kv.go",
		"rules_steps.go", "rules_wire.go", "catalog.go"},
	{"budget_errors.go", "budget_slots.go", "budget_spans.go", "budget_load.go", "budget_steps.go",
		"budget.go", "budget_owner.go"},
	{"decide.go", "halves.go", "rollback.go", "triggers_export.go"},
	{"diagnose.go"},
}

// TestLayoutFlowsOneWay type-checks the package's own files and fails on any use of a
// package-level name, method or field defined in a later file group than the user's, or
// in a file no group lists.
func TestLayoutFlowsOneWay(t *testing.T) {
	if testing.Short() {
		t.Skip("type-checks the package and its imports from source")
	}
	group := map[string]int{}
	for i, g := range layout {
		for _, f := range g {
			group[f] = i
		}
	}
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for f := range group {
		if _, err := os.Stat(f); err != nil {
			t.Errorf("layout lists %s, which is not here: %v", f, err)
		}
	}
	fset := token.NewFileSet()
	var files []*ast.File
	for _, n := range names {
		if strings.HasSuffix(n, "_test.go") {
			continue
		}
		if _, ok := group[n]; !ok {
			t.Errorf("%s is in no file group: add it to layout and to doc.go", n)
			continue
		}
		src, err := os.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, n, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	info := &types.Info{Defs: map[*ast.Ident]types.Object{}, Uses: map[*ast.Ident]types.Object{}, Selections: map[*ast.SelectorExpr]*types.Selection{}}
	conf := types.Config{Importer: importer.ForCompiler(fset, "source", nil)}
	pkg, err := conf.Check("github.com/pel-ladder/pel/diagnose", fset, files, info)
	if err != nil {
		t.Fatal(err)
	}
	// Where each of the package's own objects is defined.
	home := map[types.Object]string{}
	for id, obj := range info.Defs {
		if obj != nil && obj.Pkg() == pkg {
			home[obj] = fset.Position(id.Pos()).Filename
		}
	}
	seen := map[[2]string]bool{}
	for id, obj := range info.Uses {
		def, ok := home[origin(obj)]
		if !ok || !isShared(obj, pkg) {
			continue
		}
		user := fset.Position(id.Pos()).Filename
		if group[def] > group[user] && !seen[[2]string{user, obj.Name()}] {
			seen[[2]string{user, obj.Name()}] = true
			t.Errorf("%s uses %s, defined in %s: a later file group (move it down, or the user up)", user, obj.Name(), def)
		}
	}
	if len(files) < 20 || len(home) < 200 {
		t.Fatalf("read %d files, %d definitions: the check saw too little to mean anything", len(files), len(home))
	}
}

// origin is the declared object behind a use of a generic type's field or method.
func origin(obj types.Object) types.Object {
	switch o := obj.(type) {
	case *types.Func:
		return o.Origin()
	case *types.Var:
		return o.Origin()
	}
	return obj
}

// isShared: a package-level name, a method or a field (what another file can use).
func isShared(obj types.Object, pkg *types.Package) bool {
	if obj.Parent() == pkg.Scope() {
		return true
	}
	switch o := obj.(type) {
	case *types.Func:
		return o.Type().(*types.Signature).Recv() != nil
	case *types.Var:
		return o.IsField()
	}
	return false
}
