"""Regenerate allocator_tables.json from upstream's shared allocator test table (dynamic-resource-allocation v0.37.2).

Run by hand (needs Go and the module cache tests/cluster/build.sh fills; the first run downloads the module's
test-only dependencies, gomega, through the Go module proxy); the unit tests only read the JSON:

    python3 tests/dra/structured/upstream/dump_allocator_tables.py

structured/internal/allocatortesting is an internal package, so the whole module is copied into a scratch
directory and instrumented there:
- allocatortesting gets dump_allocatortesting.go.txt, and RunTestAllocator calls dumpCase at the end of each
  case, after every one of upstream's assertions (a failing case never reaches it);
- the cel package reports each compilation (expression, error) and each DeviceMatches evaluation
  (expression, device, result) to hooks;
- the incubating package (the variant kube-scheduler v1.37.2 picks with its default feature gates) gets a
  TestMain that writes the dump once upstream's tests have run.
Then `go test ./structured/internal/incubating/` runs upstream's tests as usual.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[3]
MODULE = "k8s.io/dynamic-resource-allocation"
OUT = HERE / "allocator_tables.json"

CEL_HOOK = """
package cel

import (
	"context"

	celgo "github.com/google/cel-go/cel"
)

// DeviceMatchesHook, when set, sees every DeviceMatches evaluation (added by the allocator table dumper).
var DeviceMatchesHook func(expression string, input Device, matches bool, err error)

// GetOrCompileHook, when set, sees every compilation the allocator asks for (and its error, if any).
var GetOrCompileHook func(expression string, err *string)

func (c *Cache) GetOrCompile(expression string) CompilationResult {
	result := c.getOrCompileUndumped(expression)
	if GetOrCompileHook != nil {
		var msg *string
		if result.Error != nil {
			text := result.Error.Error()
			msg = &text
		}
		GetOrCompileHook(expression, msg)
	}
	return result
}

func (c CompilationResult) DeviceMatches(ctx context.Context, input Device) (bool, *celgo.EvalDetails, error) {
	matches, details, err := c.deviceMatchesUndumped(ctx, input)
	if DeviceMatchesHook != nil {
		DeviceMatchesHook(c.Expression, input, matches, err)
	}
	return matches, details, err
}
"""

TEST_MAIN = """
package incubating

import (
	"os"
	"testing"

	"k8s.io/dynamic-resource-allocation/structured/internal/allocatortesting"
)

func TestMain(m *testing.M) {
	code := m.Run()
	if code == 0 {
		allocatortesting.WriteDump()
	}
	os.Exit(code)
}
"""

RUN_CASE_START = "\t\tt.Run(name, func(t *testing.T) {\n\t\t\t_, ctx := ktesting.NewTestContext(t)\n"
RUN_CASE_END = "\t\t\tg.Expect(classLister.objs).To(gomega.ConsistOf(tc.classes))\n"


def replace_once(text: str, old: str, new: str, where: str) -> str:
    """Replace exactly one occurrence, or stop: a changed upstream file must not be instrumented silently wrong."""
    if text.count(old) != 1:
        raise SystemExit(f"{where}: expected exactly one {old.strip()!r}, found {text.count(old)}")
    return text.replace(old, new)


def instrument(work: Path) -> None:
    """Add the dump hooks to the scratch copy of the module."""
    testing_go = work / "structured/internal/allocatortesting/allocator_testing.go"
    text = testing_go.read_text()
    text = replace_once(text, RUN_CASE_START, RUN_CASE_START + "\t\t\tstartCase()\n", testing_go.name)
    text = replace_once(
        text,
        RUN_CASE_END,
        RUN_CASE_END + "\t\t\tdumpCase(t, tc, unwrap(claimsToAllocate...), results, err, allocator)\n",
        testing_go.name,
    )
    testing_go.write_text(text)
    shutil.copy(HERE / "dump_allocatortesting.go.txt", testing_go.parent / "zz_dump.go")
    instrument_cel(work)
    (work / "structured/internal/incubating/zz_dump_test.go").write_text(TEST_MAIN)


def instrument_cel(work: Path) -> None:
    """Hooks in the cel package that see each compilation and each DeviceMatches evaluation."""
    compile_go = work / "cel/compile.go"
    text = compile_go.read_text()
    text = replace_once(
        text,
        "func (c CompilationResult) DeviceMatches(",
        "func (c CompilationResult) deviceMatchesUndumped(",
        compile_go.name,
    )
    compile_go.write_text(text)
    cache_go = work / "cel/cache.go"
    text = replace_once(
        cache_go.read_text(),
        "func (c *Cache) GetOrCompile(expression string) CompilationResult {",
        "func (c *Cache) getOrCompileUndumped(expression string) CompilationResult {",
        cache_go.name,
    )
    cache_go.write_text(text)
    (work / "cel/zz_dump.go").write_text(CEL_HOOK)


def module_version() -> str:
    """k8s.io/dynamic-resource-allocation's version for the pinned Kubernetes release (v1.37.2 -> v0.37.2)."""
    return "v0." + (REPO / "tests" / "cluster" / "VERSION").read_text().strip().split(".", 1)[1]


def copy_module(work: Path) -> None:
    """A writable copy of the module from the Go module cache (read-only there), with its go.mod and go.sum."""
    gomodcache = subprocess.run(["go", "env", "GOMODCACHE"], capture_output=True, text=True, check=True).stdout.strip()
    shutil.copytree(Path(gomodcache) / f"{MODULE}@{module_version()}", work)
    for path in [work, *work.rglob("*")]:
        path.chmod(path.stat().st_mode | stat.S_IWUSR)


def main() -> int:
    version = module_version()
    with tempfile.TemporaryDirectory(prefix="dra-alloc-dump-") as tmp:
        work = Path(tmp) / "module"
        copy_module(work)
        instrument(work)
        dump = Path(tmp) / "dump.json"
        env = {**os.environ, "DRA_ALLOC_DUMP": str(dump), "GOFLAGS": "-mod=mod"}
        subprocess.run(
            ["go", "test", "-count=1", "./structured/internal/incubating/", "-run", "^TestAllocator$"],
            cwd=work,
            env=env,
            check=True,
        )
        cases = json.loads(dump.read_text())
    for case in cases.values():
        # The allocator reads a node's name and labels only; encoding/json's empty NodeStatus is noise.
        case["node"] = {"metadata": case["node"]["metadata"]}
    tables = {"upstream": f"{MODULE}@{version} structured/internal/incubating", "cases": cases}
    OUT.write_text(json.dumps(tables, indent=1, sort_keys=True) + "\n")
    print(f"wrote {OUT} ({len(cases)} cases)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
