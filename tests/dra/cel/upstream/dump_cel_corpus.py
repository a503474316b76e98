"""Regenerate cel_corpus.json: CEL expressions from upstream's own tests, with what cel-go answers for each.

Run by hand (needs Go and the module cache tests/cluster/build.sh fills); the unit tests only read the JSON:

    python3 tests/dra/cel/upstream/dump_cel_corpus.py            # cel_corpus.json
    python3 tests/dra/cel/upstream/dump_cel_corpus.py --fuzz     # cel_fuzz.json (fuzz.py, seed FUZZ_SEED)

Expressions are collected from the Go sources of the pinned release (DRA's cel and structured tests, the DRA
e2e/integration/scheduler_perf selectors, apiserver's CEL library tests, cel-go's extension tests) plus the
probes in PROBES below (semantics the tests leave implicit: error absorption, overflow, cross-type numbers,
optional chaining...). Each expression meets every device of DEVICES when it reads `device`, else the empty
device. eval_corpus.go.txt, built in a scratch module with the cluster's go.mod, evaluates every case as
kube-scheduler's DynamicResources plugin does (cel.NewCache(10, features).GetOrCompile, DeviceMatches) and
also evaluates `dyn(<expression>)` to record the value; its JSON answers are cel-go's own words. A rerun
may change an `actualCost` where a macro iterates a map (Go's map order decides where `exists` stops).
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
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[3]
K8S_MODULE = REPO / "tests" / "cluster" / "k8s"
OUT = HERE / "cel_corpus.json"
FUZZ_OUT = HERE / "cel_fuzz.json"
FUZZ_SEED, FUZZ_EXPRESSIONS, FUZZ_DEVICES = 20261201, 600, 5

# (module directory in the cache, glob, regex of the field that holds an expression)
SOURCES = [
    ("k8s.io/dynamic-resource-allocation@v0.37.2", "cel/compile_test.go", r"expression:\s*"),
    ("k8s.io/dynamic-resource-allocation@v0.37.2", "structured/**/*.go", r"Expression:\s*"),
    ("k8s.io/kubernetes@v1.37.2", "test/e2e/dra/**/*.go", r"Expression:\s*"),
    ("k8s.io/kubernetes@v1.37.2", "test/integration/dra/**/*.go", r"Expression:\s*"),
    ("k8s.io/apiserver@v0.37.2", "pkg/cel/library/*_test.go", r"expr:\s*"),
    ("github.com/google/cel-go@v0.29.2", "ext/strings_test.go", r"expr:\s*"),
    ("github.com/google/cel-go@v0.29.2", "ext/lists_test.go", r"expr:\s*"),
    ("github.com/google/cel-go@v0.29.2", "ext/sets_test.go", r"expr:\s*"),
    ("github.com/google/cel-go@v0.29.2", "ext/bindings_test.go", r"expr:\s*"),
    ("github.com/google/cel-go@v0.29.2", "ext/comprehensions_test.go", r"expr:\s*"),
]
YAML_SOURCES = [("k8s.io/kubernetes@v1.37.2", "test/integration/scheduler_perf/dra/**/*.yaml")]

DRIVER = "dra.example.com"
# Devices in v1 JSON (ResourceSlice spec.devices[] entries); the attribute names are the ones the collected
# expressions read, so most expressions find something on some device and fail on others.
DEVICES: dict[str, dict[str, Any]] = {
    "empty": {"driver": "", "device": {"name": "empty"}},
    "scalars": {"driver": DRIVER, "device": {"name": "scalars", "attributes": {
        "name": {"bool": True}, "bool": {"bool": True}, "a": {"bool": True}, "b": {"bool": True},
        "c": {"bool": True}, "int": {"int": 1}, "string": {"string": "fish"}, "version": {"version": "1.0.0"},
        "services": {"string": "some_example_value"}, "attr": {"string": "fish"},
        "other.example.com/name": {"bool": True}, "numa": {"int": 1},
    }, "capacity": {"quantity": {"value": "1Mi"}, "name": {"value": "1Mi"}, "memory": {"value": "1Mi"}}}},
    "typed": {"driver": DRIVER, "device": {"name": "typed", "attributes": {
        "name": {"int": 1}, "names": {"strings": ["fish", "bird"]}, "services": {"string": "asymetric"},
        "model": {"string": "SOME-model"}, "driverVersion": {"version": "1.2.3-rc.1+build"},
    }, "capacity": {"memory": {"value": "8Gi"}, "name": {"value": "500m"}}, "allowMultipleAllocations": True}},
    "strings": {"driver": "driver-a", "device": {"name": "strings", "attributes": {
        "name": {"string": "fish"}, "generation": {"string": "v6"}, "type": {"string": "X"},
        "kind": {"string": "shared"}, "stringAttribute": {"string": "cap"}, "boolAttribute": {"bool": False},
        "selected": {"bool": True}, "static": {"bool": True}, "numa": {"int": 2}, "numaNode": {"int": 2},
        "mode": {"string": "b"}, "special": {"bool": True},
    }, "capacity": {"memory": {"value": "4Gi"}, "counter": {"value": "2"}}}},
    "versions": {"driver": DRIVER, "device": {"name": "versions", "attributes": {
        "name": {"version": "1.0.0"}, "names": {"versions": ["1.0.0", "2.0.0"]},
        "ids": {"ints": [1, 2, 3]}, "flags": {"bools": [True, False]},
    }}},
    "bad-version": {"driver": DRIVER, "device": {"name": "bad-version", "attributes": {
        "name": {"version": "1.a.0"}}}},
    "test-driver": {"driver": "test-driver", "device": {"name": "gpu-0", "attributes": {
        "model": {"string": "SOME-GPU"}, "driverVersion": {"version": "1.0.0"},
    }, "capacity": {"memory": {"value": "16Gi"}}}},
}

# Semantics the upstream tests leave implicit, checked against cel-go all the same.
PROBES = [
    'device.attributes["dra.example.com"].nosuch == 1 || true',
    'true || device.attributes["dra.example.com"].nosuch == 1',
    'device.attributes["dra.example.com"].nosuch == 1 && false',
    'device.attributes["dra.example.com"].nosuch == 1 || false',
    'device.attributes["dra.example.com"].nosuch > 1 || device.attributes["dra.example.com"].other > 1',
    'device.attributes["dra.example.com"].name < "b"',
    'device.attributes["dra.example.com"].name == "x"',
    'device.attributes["dra.example.com"].name == 1',
    'device.attributes["dra.example.com"].name == 1.0',
    'device.attributes["dra.example.com"].name == 1u',
    'device.attributes["dra.example.com"].name > 0.5',
    'device.attributes["dra.example.com"].name + 1 > 1',
    'device.attributes["dra.example.com"].name.startsWith("f")',
    'device.attributes["dra.example.com"].name.isGreaterThan(semver("0.1.0"))',
    'device.attributes["dra.example.com"].name.isGreaterThan(quantity("1"))',
    'has(device.attributes["dra.example.com"].name)',
    'has(device.attributes.nosuchdomain)',
    'has(device.attributes["dra.example.com"].nosuch)',
    'has(device.driver)',
    'device.attributes["dra.example.com"].?name.orValue(false) == true',
    'device.attributes["dra.example.com"].?nosuch.orValue(7) == 7',
    'device.attributes[?"dra.example.com"].hasValue()',
    'device.attributes["dra.example.com"][?"nosuch"].hasValue()',
    '"name" in device.attributes["dra.example.com"]',
    'device.attributes["nosuch.example.com"].size() == 0',
    'device.capacity["dra.example.com"].memory.isGreaterThan(quantity("1Gi"))',
    'device.capacity["dra.example.com"].memory.compareTo(quantity("8Gi")) == 0',
    'device.capacity["dra.example.com"].memory == quantity("8Gi")',
    'device.capacity["dra.example.com"].memory == quantity("8192Mi")',
    'device.capacity["dra.example.com"].name.asApproximateFloat() == 0.5',
    'device.capacity["dra.example.com"].name.isInteger()',
    'device.capacity["dra.example.com"].memory.asInteger() > 1000',
    'device.capacity["dra.example.com"].memory.add(quantity("1Gi")) == quantity("9Gi")',
    'quantity("9Gi") == device.capacity["dra.example.com"].memory.add(quantity("1Gi"))',
    'device.capacity["dra.example.com"].memory.sub(1).isLessThan(device.capacity["dra.example.com"].memory)',
    'sign(device.capacity["dra.example.com"].memory) == 1',
    'device.capacity.all(d, device.capacity[d].all(n, device.capacity[d][n].sign() >= 0))',
    'device.attributes["dra.example.com"].driverVersion.major() == 1',
    'device.attributes["dra.example.com"].driverVersion.isLessThan(semver("1.2.3"))',
    'device.attributes["dra.example.com"].driverVersion == semver("1.2.3-rc.1")',
    'device.attributes["dra.example.com"].driverVersion.compareTo(semver("1.2.3-rc.1+other")) == 0',
    'device.attributes["dra.example.com"].names.exists(n, n == "bird")',
    'device.attributes["dra.example.com"].names.all(n, n.size() == 4)',
    'device.attributes["dra.example.com"].ids.sum() == 6',
    'device.attributes["dra.example.com"].ids.max() == 3',
    'device.attributes["dra.example.com"].ids.isSorted()',
    'device.attributes["dra.example.com"].ids.indexOf(2) == 1',
    'device.attributes["dra.example.com"].ids.map(i, i * 2).filter(i, i > 2).size() == 2',
    'device.attributes["dra.example.com"].ids[1] == 2',
    'device.attributes["dra.example.com"].ids[5] == 2',
    'device.attributes["dra.example.com"].flags[0]',
    'sets.contains(device.attributes["dra.example.com"].ids, [1, 3])',
    'device.attributes["dra.example.com"].exists(k, k == "ids")',
    'device.attributes["dra.example.com"].all(k, v, v != null)',
    'device.allowMultipleAllocations',
    '!device.allowMultipleAllocations',
    'device.driver.matches("^dra[.]")',
    'device.driver.split(".").size() == 3',
    'device.driver.upperAscii() == "DRA.EXAMPLE.COM"',
    'device.driver.substring(4) == "example.com"',
    'device.driver.substring(40) == ""',
    'device.driver.charAt(0) == "d"',
    'device.driver.indexOf("example") == 4',
    'device.driver.replace(".", "-") == "dra-example-com"',
    'device.driver.endsWith(".com") && device.driver.contains("example")',
    'device.driver + "/x" == "dra.example.com/x"',
    'device.driver.size() == 15 && size(device.driver) == 15',
    'device.driver in ["dra.example.com", "other"]',
    'cel.bind(a, device.attributes["dra.example.com"], a.?name.hasValue())',
    'device.attributes.exists(d, d == "dra.example.com")',
    'device.attributes.map(d, d).size() >= 0',
    'device.capacity.exists_one(d, true)',
    'device.attributes["dra.example.com"].map(k, k).size() == device.attributes["dra.example.com"].size()',
    '9223372036854775807 + 1 > 0',
    '-9223372036854775808 - 1 < 0',
    '-9223372036854775808 / -1 < 0',
    '1 / 0 == 1',
    '1 % 0 == 1',
    '5 % -3 == 2',
    '-5 / 2 == -2',
    '1.0 / 0.0 > 1e308',
    '18446744073709551615u + 1u > 0u',
    '0u - 1u > 0u',
    'int(9223372036854775807.0) > 0',
    'int("12") == 12',
    'int("x") == 12',
    'uint(-1) == 1u',
    'double("1e3") == 1000.0',
    'string(1.5) == "1.5"',
    'string(1000000.0) == "1e+06"',
    'string(0.0001) == "0.0001"',
    'string(0.00001) == "1e-05"',
    'string(123456.0) == "123456"',
    'string(true) == "true"',
    'bool("TRUE")',
    'bool("yes")',
    'type(1) == int && type("a") == string && type(device) != int',
    'dyn(1) == 1.0 && dyn(1u) == 1 && dyn(2.0) > 1',
    'dyn(1) < 1.5 && 1u < 2 && 1.5 > 1',
    'dyn("a") + dyn(1) == "a1"',
    'dyn(1).isGreaterThan(quantity("1"))',
    'dyn(quantity("1")) == dyn(1)',
    'dyn(1) == dyn(quantity("1"))',
    'dyn(semver("1.0.0")) == dyn("1.0.0")',
    '[1, 2, 3].exists(x, x / 0 == 1 || x == 2)',
    '[1, 2, 3].all(x, x / (x - 2) >= 0 && false)',
    '[1, 2, 3].exists_one(x, x > 2)',
    '[1, 2, 3].exists_one(x, 1 / (x - 2) > 0)',
    '[1, 2].map(x, x / 0).size() == 2',
    '{"a": 1, "b": 2}.all(k, k.size() == 1)',
    '{"a": 1}["b"] == 1',
    '{"a": 1}.b == 1',
    '{1: "a"}[1u] == "a"',
    '{1: "a"}[1.0] == "a"',
    '[1, 2][1.0] == 2',
    '[1, 2][1.5] == 2',
    '[[1], [2, 3]].flatten().size() == 3',
    '[3, 1, 2].sort() == [1, 2, 3]',
    '[3, 1, 2].sortBy(x, -x) == [3, 2, 1]',
    'lists.range(3) == [0, 1, 2]',
    '[1, 2, 2].distinct() == [1, 2]',
    '[1, 2, 3].slice(1, 2) == [2]',
    '[1, 2, 3].reverse() == [3, 2, 1]',
    '[1, 2].transformList(i, v, v * i) == [0, 2]',
    '{"a": 1}.transformMap(k, v, v + 1) == {"a": 2}',
    '[1, 2, 3].first().value() == 1 && [].last().hasValue() == false',
    '[1, ?optional.none(), ?optional.of(2)] == [1, 2]',
    '{?"a": optional.none(), "b": 1} == {"b": 1}',
    'optional.of(1).optMap(x, x + 1).value() == 2',
    'optional.none().orValue(3) == 3',
    '["a", "b"].join("-") == "a-b"',
    '"a,b,c".split(",", 2) == ["a", "b,c"]',
    '" x ".trim() == "x"',
    'strings.quote("a\\"b") == "\\"a\\\\\\"b\\""',
    '"abc".lastIndexOf("c") == 2',
    '"aaa".replace("a", "b", 2) == "bba"',
    '"äb".upperAscii() == "äB"',
    '"abc".matches("[")',
    '"abc123".find("[0-9]+") == "123"',
    '"a1b2".findAll("[0-9]") == ["1", "2"]',
    'isSemver("1.0") == false && isSemver("v1.0", true)',
    'semver("v1.0", true) == semver("1.0.0")',
    'semver("01.2.3", true).major() == 1',
    'semver("1.0.0-alpha") < semver("1.0.0")',
    'semver("1.0.0-alpha").isLessThan(semver("1.0.0-alpha.1"))',
    'semver("1.0.0-beta.2").isLessThan(semver("1.0.0-beta.11"))',
    'semver("1.0.0-01") == semver("1.0.0")',
    'semver("") == semver("1.0.0")',
    'semver("1.0.0+") == semver("1.0.0")',
    'semver("1.0") == semver("1.0.0")',
    'isQuantity("1Gi") && !isQuantity("1GB") && !isQuantity("")',
    'quantity("1Gi") == quantity("1024Mi")',
    'quantity("1.5") == quantity("1500m")',
    'quantity("1e3").asInteger() == 1000',
    'quantity("1m").isInteger()',
    'quantity("10Ei").isInteger()',
    'quantity("1Mii").sign() == 1',
    'quantity("x") == quantity("1")',
    'quantity("0.5").asApproximateFloat() == 0.5',
    'quantity("1").add(1) == quantity("2")',
    'quantity("2") == quantity("1").add(1)',
    'ip("10.0.0.1").family() == 4 && ip("::1").isLoopback()',
    'cidr("10.0.0.0/8").containsIP(ip("10.1.2.3"))',
    'cidr("10.0.0.0/8").containsIP("11.1.2.3")',
    'cidr("10.0.0.0/8").containsCIDR("10.1.0.0/16")',
    'ip("10.0.0.256") == ip("10.0.0.1")',
    'cidr("10.0.0.1/8").masked() == cidr("10.0.0.0/8")',
    'string(cidr("10.0.0.0/8")) == "10.0.0.0/8"',
    'ip.isCanonical("2001:db8::1") && !ip.isCanonical("2001:DB8::1")',
    'ip("fe80::1").isLinkLocalUnicast() && ip("224.0.0.1").isLinkLocalMulticast()',
    'url("https://example.com:80/path?q=1").getHost() == "example.com:80"',
    '[1, 2, 3].includes(2) && "model-a".includes("model-a")',
    '[1, 2, 3].lastIndexOf(3) == 2 && [1.0, 2.5].min() == 1.0',
    'device.foo == 1',
    'device.attributes.foo.bar',
    'foo(1)',
    'x == 1',
    '1 + 1',
    '"a" < 1',
    '1 == 1.0',
    '[1, "a"].size() == 2',
    '{1: "a", "b": 2}.size() == 2',
    'true ? 1 : "a"',
    'device.driver > 1',
    'device.capacity["x"].y > 1',
    'device.attributes["dra.example.com"].name.exists(x, x)',
    '1 +',
    '"unterminated',
    'a.b.c(',
    'device.driver == "a" &&',
    '[1, 2,].size() == 2',
    '{"a": 1,}.size() == 1',
    'if == 1',
    '0x10 == 16 && 0x10u == 16u',
    "r'\\d' == '\\\\d' && b'abc' == bytes('abc') && '''x''' == \"x\"",
    '"\\u00e4" == "ä" && "\\x41" == "A" && "\\101" == "A"',
    '[1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(x, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(y, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]'
    '.all(z, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(w, x + y + z + w > 0))))',
    'lists.range(1000).all(i, lists.range(1000).all(j, i + j >= 0))',
    'lists.range(2000).map(i, "a" + string(i)).exists(s, s == "zzz")',
    'cidr("10.0.0.0/") == cidr("10.0.0.0/8")',
    'cidr("10.0.0.0/08") == cidr("10.0.0.0/8")',
    'cidr("10.0.0.0/33") == cidr("10.0.0.0/8")',
    'cidr("fe80::1%eth0/64") == cidr("::/0")',
    'cidr("10.0.0.0") == cidr("10.0.0.0/8")',
    'ip("fe80::1%eth0") == ip("::1")',
    'ip("::ffff:1.2.3.4") == ip("::1")',
    'cidr("::ffff:1.2.3.4/96") == cidr("::/0")',
    'ip("1.2.3.04") == ip("1.2.3.4")',
    'ip("1.2..4") == ip("1.2.3.4")',
    'ip("1.2.3") == ip("1.2.3.4")',
    'ip("1.2.3.x") == ip("1.2.3.4")',
    'ip("12345::") == ip("::1")',
    'ip("1::2::3") == ip("::1")',
    'ip("1:2:3:4:5:6:7:8:9") == ip("::1")',
    'ip("1:2:3:4:5:6:7::8") == ip("::1")',
    'ip("::1.2.3.4") == ip("::1")',
    'ip("1:2") == ip("::1")',
    'ip("") == ip("::1")',
    'ip("%eth0") == ip("::1")',
    'quantity("1000m").isInteger()',
    'quantity("1.0").isInteger()',
    'quantity("1e-10").asApproximateFloat() > 0.0',
    'quantity("0.1n") == quantity("1n")',
    'quantity("1").add(quantity("0.5")).isInteger()',
    'quantity("9223372036854775807").add(1).isInteger()',
    'quantity("9223372036854775807").add(1).asApproximateFloat() > 0.0',
    'quantity("1Ki").isInteger() && quantity("1.5Ki").isInteger() == false',
    'quantity("123456789012345678901").isInteger()',
    'quantity("-1").sub(quantity("1")).asInteger() == -2',
    'quantity("1.5Gi").compareTo(quantity("1536Mi")) == 0',
    '"%d items".format([3]) == "3 items"',
    '"%.2f".format([3.14159]) == "3.14"',
    '"%s".format([[1, "a"]]) == "[1, a]"',
    '"%x".format([255]) == "ff" && "%X".format(["hi"]) == "6869"',
    '"%d".format(["x"]) == ""',
    '"%e".format([1234.5]) == "1.234500e+03"',
    '"%s".format([{"b": 1, "a": 2}]) == "{a: 2, b: 1}"',
    '"%b".format([true]) == "1" && "%o".format([8]) == "10"',
    '"%s %s %s".format([1.5, null, true]) == "1.5 null true"',
    '"%s".format([]) == ""',
    '"%q".format([1]) == ""',
    '"100%%".format([]) == "100%"',
    'url("https://user@example.com:8080/a/b?x=1&x=2&y").getQuery() == {"x": ["1", "2"], "y": [""]}',
    'url("https://[::1]:80/").getHostname() == "::1" && url("https://[::1]:80/").getPort() == "80"',
    'url("https://example.com").getScheme() == "https" && url("/relative/path").getEscapedPath() == "/relative/path"',
    'url("not a url") == url("https://x")',
    'isURL("https://example.com") && !isURL("example.com") && isURL("/abs")',
    '[1, 0, 2].exists_one(x, 1 / x > 0)',
    '[1, 0].filter(x, 1 / x > 0).size() == 1',
    '[0, 1].map(x, 1 / x).size() == 2',
    '[1, 2].map(x, x > 1, 1 / (x - 2)).size() == 1',
    'cel.bind(x, 1 / 0, true)',
    'cel.bind(x, 1 / 0, x > 0 || true)',
    'dyn(1).all(i, v, true)',
    '{"a": 1, "b": 2}.transformMapEntry(k, v, {"x": v}).size() == 1',
    'has(device.attributes["dra.example.com"].ids)',
    'device.attributes["dra.example.com"].name.matches("^f")',
    'device.attributes.all(d, device.attributes[d].all(a, has(device.attributes[d][a]) || true))',
    'device.attributes["dra.example.com"].ids.filter(i, i > 1).map(i, i * 10) == [20, 30]',
    'device.attributes["dra.example.com"].ids.all(i, i > 0) && '
    'device.attributes["dra.example.com"].flags.exists(f, !f)',
    'device.attributes["dra.example.com"].names.exists(v, v.isGreaterThan(semver("1.5.0")))',
    'device.attributes["dra.example.com"].name.major() == 1',
    'device.capacity["dra.example.com"].memory.isGreaterThan(device.capacity["dra.example.com"].name)',
    'format.dns1123Label().validate("UPPER") == optional.none()',
    'format.qualifiedName().validate("a/b/c").value().size() == 1',
    'format.qualifiedName().validate("/x").value()[0] == ""',
    'format.labelValue().validate("x".repeat(70)).hasValue()',
    'format.dns1123SubdomainPrefix().validate("abc-").hasValue()',
    'format.named("labelValue").value().validate("ok_value").hasValue()',
    'format.datetime().validate("2021-01-01T25:00:00Z").hasValue()',
    'format.uuid().validate("123E4567E89B12D3A456426614174000").hasValue()',
    '"%.2f".format([1234.5])',
    '"%e".format([1234.5])',
    '"%.2e".format([1234.5])',
    '"%f".format([1.0])',
    '"%.3f".format([-0.5])',
    '"%f".format(["NaN"])',
    '"%s".format([{"b": 1, "a": "x"}])',
    '"%s".format([[1, "a", 2.5, b"x", null, true, 1u]])',
    '"%s".format([1e21])',
    '"%s".format([{1: [2.0]}])',
    '"%d".format([dyn("x")])',
    '"%f".format([1])',
    '"%s %s".format(["a"])',
    '"%s".format(["a", "b"])',
    '"%s".format([type(1)])',
    '"%x".format([-255])',
    '"abc\\n".matches("abc$")',
    '"abc\\nx".matches("(?m)abc$")',
    '"a.b".matches(r"\\Qa.b\\E") && !"axb".matches(r"^\\Qa.b\\E$")',
    '"ab".matches("a(?=b)")',
    '"aa".matches(r"(a)\\1")',
    '"x]".matches("[]]")',
    '"ab".find("(?P<first>a)") == "a"',
    '"abc".matches(device.driver)',
]


def go_string_literals(text: str, field: str) -> list[str]:
    """The expressions written after `field` in Go source: raw strings, quoted strings, or fmt.Sprintf of one."""
    out: list[str] = []
    for m in re.finditer(field + r"(fmt\.Sprintf\(\s*)?(`[^`]*`|\"(?:[^\"\\\n]|\\.)*\")", text):
        literal = m.group(2)
        if literal.startswith("`"):
            value = literal[1:-1]
        else:
            value = json.loads(literal) if "\\x" not in literal else literal[1:-1]
        if m.group(1):
            value = value.replace("%s", "driver-a").replace("%v", "true").replace("%d", "48")
        if value.strip():
            out.append(value)
    return out


def collect(gomodcache: Path) -> list[tuple[str, str]]:
    """(expression, source) pairs, first appearance kept."""
    seen: dict[str, str] = {}
    for module, pattern, field in SOURCES:
        root = gomodcache / module
        for path in sorted(root.glob(pattern)):
            for expr in go_string_literals(path.read_text(), field):
                seen.setdefault(expr, f"{module}/{path.relative_to(root)}")
    for module, pattern in YAML_SOURCES:
        root = gomodcache / module
        for path in sorted(root.glob(pattern)):
            for m in re.finditer(r"expression:[ \t]*([^|\s].*)", path.read_text()):
                seen.setdefault(m.group(1).strip(), f"{module}/{path.relative_to(root)}")
    for probe in PROBES:
        seen.setdefault(probe, "probe")
    return list(seen.items())


def evaluate_with_cel_go(cases: list[dict[str, Any]]) -> dict[str, Any]:
    """cel-go's answers to the cases ({id, expression, driver, device}), by id."""
    with tempfile.TemporaryDirectory(prefix="cel-dump-") as tmp:
        work = Path(tmp)
        shutil.copy(K8S_MODULE / "go.mod", work / "go.mod")
        shutil.copy(K8S_MODULE / "go.sum", work / "go.sum")
        (work / "evalcorpus").mkdir()
        shutil.copy(HERE / "eval_corpus.go.txt", work / "evalcorpus" / "main.go")
        env = {**os.environ, "GOFLAGS": "-mod=mod", "GOPROXY": "off", "GOSUMDB": "off"}
        subprocess.run(["go", "build", "-o", "evalcorpus.bin", "./evalcorpus"], cwd=work, env=env, check=True)
        inputs = [{k: c[k] for k in ("id", "expression", "driver", "device")} for c in cases]
        proc = subprocess.run([str(work / "evalcorpus.bin")], input=json.dumps(inputs), capture_output=True,
                              text=True, check=True)
    return {a["id"]: a for a in json.loads(proc.stdout)}


def write(path: Path, doc: dict[str, Any]) -> None:
    # One case per line: reviewable diffs when upstream changes, a third of the indented size.
    lines = [json.dumps(c, sort_keys=True, ensure_ascii=False) for c in doc["cases"]]
    head = json.dumps({k: v for k, v in doc.items() if k != "cases"}, indent=1, sort_keys=True, ensure_ascii=False)
    path.write_text(head[:-2] + ',\n "cases": [\n' + ",\n".join(lines) + "\n ]\n}\n")


def dump_corpus(gomodcache: Path) -> None:
    expressions = collect(gomodcache)
    cases: list[dict[str, Any]] = []
    for n, (expr, source) in enumerate(expressions):
        devices = list(DEVICES) if "device" in expr else ["empty"]
        for name in devices:
            dev = DEVICES[name]
            cases.append({"id": f"{n}/{name}", "source": source, "expression": expr, "deviceName": name,
                          "driver": dev["driver"], "device": dev["device"]})
    answers = evaluate_with_cel_go(cases)
    for c in cases:
        answer = answers[c["id"]]
        c["expected"] = {k: v for k, v in answer.items() if k != "id"}
        del c["driver"], c["device"]
    write(OUT, {"upstream": "k8s.io/dynamic-resource-allocation@v0.37.2 (cel-go v0.29.2)", "devices": DEVICES,
                "cases": cases})
    print(f"wrote {OUT} ({len(expressions)} expressions, {len(cases)} cases)")


def dump_fuzz() -> None:
    sys.path.insert(0, str(HERE))
    import fuzz  # type: ignore[import-not-found]

    expressions, devices = fuzz.generate(FUZZ_SEED, FUZZ_EXPRESSIONS, FUZZ_DEVICES)
    cases = [{"id": f"{n}/{d}", "expression": e, "deviceIndex": d, "driver": devices[d]["driver"],
              "device": devices[d]["device"]} for n, e in enumerate(expressions) for d in range(len(devices))]
    answers = evaluate_with_cel_go(cases)
    rows = []
    for n, e in enumerate(expressions):
        got = [answers[f"{n}/{d}"] for d in range(len(devices))]
        rows.append({"expression": e, "compileError": got[0]["compileError"],
                     "results": [[a["matches"], a["error"], a["actualCost"]] for a in got]})
    doc = {"upstream": "k8s.io/dynamic-resource-allocation@v0.37.2 (cel-go v0.29.2)", "seed": FUZZ_SEED,
           "devices": devices, "cases": rows}
    write(FUZZ_OUT, doc)
    print(f"wrote {FUZZ_OUT} ({len(expressions)} expressions x {len(devices)} devices)")


def main() -> int:
    gomodcache = Path(subprocess.run(["go", "env", "GOMODCACHE"], capture_output=True, text=True,
                                     check=True).stdout.strip())
    if "--fuzz" in sys.argv[1:]:
        dump_fuzz()
    else:
        dump_corpus(gomodcache)
    return 0


if __name__ == "__main__":
    sys.exit(main())
