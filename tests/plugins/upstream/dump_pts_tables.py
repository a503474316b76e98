"""Regenerate pod_topology_spread_tables.json from upstream's own PodTopologySpread test tables (v1.37.2).

Run by hand (needs Go and the module cache tests/cluster/build.sh fills); the unit tests only read the JSON:

    python3 tests/plugins/upstream/dump_pts_tables.py

The package's sources are copied into a scratch module; each table-driven Test* function of filtering_test.go
and scoring_test.go gets one added line, `dumpCases("<TestName>", tests)`, and dump_tables_test.go.txt renders
every case (inputs and upstream's expected results) as JSON. Upstream's tests then run as usual, so a dump is
only written if they still pass.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
K8S_MODULE = REPO / "tests" / "cluster" / "k8s"
PKG = "k8s.io/kubernetes/pkg/scheduler/framework/plugins/podtopologyspread"
FILES = ("filtering_test.go", "scoring_test.go")
OUT = HERE / "pod_topology_spread_tables.json"


def instrument(source: str) -> str:
    """Insert dumpCases(<enclosing Test func>, tests) before each `for _, tt := range tests {` of a Test*."""
    out: list[str] = []
    func = ""
    for line in source.splitlines(keepends=True):
        m = re.match(r"^func (\w+)\(", line)
        if m:
            func = m.group(1)
        if func.startswith("Test") and re.match(r"^\tfor _, \w+ := range tests \{", line):
            out.append(f'\tdumpCases("{func}", tests)\n')
        out.append(line)
    return "".join(out)


NOISE = frozenset({"resources", "status", "metadata", "spec"})


def strip(value: object) -> object:
    """Drop the null/empty noise encoding/json emits (creationTimestamp: null, resources: {}...).

    Only nulls and empty objects under NOISE keys go: an empty labelSelector ({}, "everything") must stay.
    """
    if isinstance(value, dict):
        kept = {k: strip(v) for k, v in value.items()}
        return {k: v for k, v in kept.items() if v is not None and not (k in NOISE and v == {})}
    if isinstance(value, list):
        return [strip(v) for v in value]
    return value


def main() -> int:
    gomodcache = subprocess.run(["go", "env", "GOMODCACHE"], capture_output=True, text=True, check=True).stdout.strip()
    version = (REPO / "tests" / "cluster" / "VERSION").read_text().strip()
    pkg_dir = Path(gomodcache) / f"k8s.io/kubernetes@{version}" / "pkg/scheduler/framework/plugins/podtopologyspread"
    with tempfile.TemporaryDirectory(prefix="pts-dump-") as tmp:
        # The module cache is read-only and `go test -overlay` may not replace files in it: copy the package
        # (same sources, exported k8s.io/kubernetes imports) into a scratch module with the cluster's go.mod.
        work = Path(tmp)
        shutil.copy(K8S_MODULE / "go.mod", work / "go.mod")
        shutil.copy(K8S_MODULE / "go.sum", work / "go.sum")
        pkg = work / "podtopologyspread"
        pkg.mkdir()
        for src in sorted(pkg_dir.glob("*.go")):
            text = src.read_text()
            (pkg / src.name).write_text(instrument(text) if src.name in FILES else text)
        shutil.copy(HERE / "dump_tables_test.go.txt", pkg / "zz_dump_test.go")
        dump = work / "dump.json"
        env = {**os.environ, "PTS_DUMP": str(dump), "GOFLAGS": "-mod=mod"}
        subprocess.run(["go", "test", "-count=1", "./podtopologyspread"], cwd=work, env=env, check=True)
        tables = json.loads(dump.read_text())
    tables = {"upstream": f"{PKG}@{version}", **{k: strip(v) for k, v in sorted(tables.items())}}
    OUT.write_text(json.dumps(tables, indent=1, sort_keys=True) + "\n")
    print(f"wrote {OUT} ({sum(len(v) for k, v in tables.items() if k != 'upstream')} cases)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
