"""Seeded random selectors and devices for the differential check against cel-go (cel_fuzz.json).

A pure function of the seed: the same seed gives the same expressions and devices, so the JSON that
dump_cel_corpus.py --fuzz writes (with cel-go's answers) stays reproducible. The generator writes what DRA
selectors are made of, typed loosely on purpose: attributes of every type read by name (present or not,
in the driver's domain or another), compared with literals of every type, capacity checks, string and
list functions, macros, arithmetic, conversions, ternaries, optionals, nested logic.
"""

from __future__ import annotations

import random
from typing import Any

DRIVERS = ["gpu.example.com", "nic.example.com"]
DOMAINS = ["gpu.example.com", "nic.example.com", "numa.example.com", "missing.example.com"]
NAMES = ["model", "index", "enabled", "version", "cores", "labels", "memory", "count", "missing", "flags"]
STRINGS = ["a100", "h100", "", "A100", "x", "model-a"]
VERSIONS = ["1.0.0", "1.2.3", "2.0.0-rc.1", "10.1.0"]
QUANTITIES = ["0", "1", "40Gi", "80Gi", "500m", "1.5", "1Mi", "100k"]


def device(rng: random.Random, n: int) -> dict[str, Any]:
    """A random device entry (v1 JSON) and its driver."""
    driver = rng.choice(DRIVERS)
    attributes: dict[str, Any] = {}
    for name in rng.sample(NAMES[:-2], rng.randint(2, 7)):
        key = name if rng.random() < 0.75 else f"{rng.choice(DOMAINS[:3])}/{name}"
        kind = rng.choice(["int", "string", "bool", "version", "ints", "strings", "bools", "versions"])
        if kind == "int":
            value: Any = rng.randint(-3, 100)
        elif kind == "string":
            value = rng.choice(STRINGS)
        elif kind == "bool":
            value = rng.random() < 0.5
        elif kind == "version":
            value = rng.choice(VERSIONS)
        elif kind == "ints":
            value = [rng.randint(0, 9) for _ in range(rng.randint(0, 4))]
        elif kind == "strings":
            value = rng.sample(STRINGS, rng.randint(0, 3))
        elif kind == "bools":
            value = [rng.random() < 0.5 for _ in range(rng.randint(0, 3))]
        else:
            value = rng.sample(VERSIONS, rng.randint(0, 3))
        attributes[key] = {kind: value}
    capacity = {name: {"value": rng.choice(QUANTITIES)} for name in rng.sample(["memory", "cores", "slots"],
                                                                                rng.randint(0, 3))}
    entry: dict[str, Any] = {"name": f"dev-{n}", "attributes": attributes, "capacity": capacity}
    if rng.random() < 0.3:
        entry["allowMultipleAllocations"] = rng.random() < 0.5
    return {"driver": driver, "device": entry}


class Generator:
    """Random boolean CEL expressions over `device`."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def attr(self) -> str:
        r = self.rng
        domain = r.choice(DOMAINS[:2] + DOMAINS) if r.random() < 0.9 else r.choice(DOMAINS)
        name = r.choice(NAMES)
        return f'device.attributes["{domain}"].{name}' if r.random() < 0.7 else (
            f'device.attributes["{domain}"]["{name}"]')

    def cap(self) -> str:
        r = self.rng
        return f'device.capacity["{r.choice(DOMAINS[:3])}"].{r.choice(["memory", "cores", "slots", "missing"])}'

    def literal(self) -> str:
        r = self.rng
        kind = r.randint(0, 7)
        if kind == 0:
            return str(r.randint(-5, 100))
        if kind == 1:
            return f'"{r.choice(STRINGS)}"'
        if kind == 2:
            return r.choice(["true", "false"])
        if kind == 3:
            return r.choice(["1.5", "0.0", "-2.0", "100.0"])
        if kind == 4:
            return f"{r.randint(0, 9)}u"
        if kind == 5:
            return f'semver("{r.choice(VERSIONS)}")'
        if kind == 6:
            return f'quantity("{r.choice(QUANTITIES)}")'
        return "null"

    def value(self, depth: int) -> str:
        r = self.rng
        kind = r.randint(0, 13)
        if kind < 4 or depth <= 0:
            return self.attr()
        if kind == 4:
            return self.literal()
        if kind == 5:
            return f"({self.value(depth - 1)} {r.choice(['+', '-', '*', '/', '%'])} {self.value(depth - 1)})"
        if kind == 6:
            return f"{r.choice(['int', 'string', 'double', 'dyn', 'uint'])}({self.value(depth - 1)})"
        if kind == 7:
            return f"{self.attr()}.?{r.choice(NAMES)}.orValue({self.literal()})" if r.random() < 0.3 else (
                f'device.attributes["{r.choice(DOMAINS)}"].?{r.choice(NAMES)}.orValue({self.literal()})')
        if kind == 8:
            return f"({self.bool(depth - 1)} ? {self.value(depth - 1)} : {self.value(depth - 1)})"
        if kind == 10:
            fn = r.choice(["lowerAscii()", "upperAscii()", "trim()", "substring(1)", "charAt(0)", 'replace("a", "b")',
                           'indexOf("a")', 'split("-").size()', 'lastIndexOf("0")', 'substring(0, 2)'])
            return f"{self.attr()}.{fn}"
        if kind == 11:
            fn = r.choice(["sum()", "min()", "max()", "isSorted()", "indexOf(1)", "distinct().size()", "sort()",
                           "reverse()", "slice(0, 1)", "first().orValue(0)"])
            return f"{self.attr()}.{fn}"
        if kind == 12:
            return r.choice(["9223372036854775807", "-9223372036854775808", "18446744073709551615u", "1e308"])
        if kind == 13:
            return f'({self.attr()} + "{r.choice(STRINGS)}")'
        return f"{self.attr()}.size()"

    def bool(self, depth: int) -> str:
        r = self.rng
        kind = r.randint(0, 21)
        if depth <= 0:
            kind = r.choice([0, 1, 2])
        if kind == 0:
            return f'device.driver == "{r.choice(DRIVERS)}"'
        if kind == 1:
            return f"{self.value(depth - 1)} {r.choice(['==', '!=', '<', '<=', '>', '>='])} {self.literal()}"
        if kind == 2:
            return self.attr()
        if kind == 3:
            return f"{self.bool(depth - 1)} {r.choice(['&&', '||'])} {self.bool(depth - 1)}"
        if kind == 4:
            return f"!({self.bool(depth - 1)})"
        if kind == 5:
            return f"has({self.attr()})" if r.random() < 0.5 else f'"{r.choice(DOMAINS)}" in device.attributes'
        if kind == 6:
            cmp = r.choice(["isGreaterThan", "isLessThan"])
            return f'{self.cap()}.{cmp}(quantity("{r.choice(QUANTITIES)}"))' if r.random() < 0.6 else (
                f'{self.cap()}.compareTo(quantity("{r.choice(QUANTITIES)}")) {r.choice(["<", ">=", "=="])} 0')
        if kind == 7:
            return f'{self.attr()}.{r.choice(["isGreaterThan", "isLessThan"])}(semver("{r.choice(VERSIONS)}"))'
        if kind == 8:
            fn = r.choice(["startsWith", "endsWith", "contains", "matches"])
            arg = r.choice(["a", "1", "", "^[a-z]+[0-9]+$", "x", "00"])
            return f'{self.attr()}.{fn}("{arg}")'
        if kind == 9:
            macro = r.choice(["exists", "all", "exists_one"])
            return f"{self.attr()}.{macro}(x, {self.pred('x', depth - 1)})"
        if kind == 10:
            target, pred = self.attr(), self.pred("x", depth - 1)
            return f"{target}.filter(x, {pred}).size() {r.choice(['==', '>'])} {r.randint(0, 2)}"
        if kind == 11:
            return f"{self.literal()} in {self.attr()}" if r.random() < 0.5 else (
                f"{self.attr()} in [{self.literal()}, {self.literal()}]")
        if kind == 12:
            return f"{self.attr()}.includes({self.literal()})"
        if kind == 13:
            return f'cel.bind(a, device.attributes["{r.choice(DOMAINS)}"], {self.bind_body(depth - 1)})'
        if kind == 14:
            return f"device.allowMultipleAllocations {r.choice(['==', '!='])} {r.choice(['true', 'false'])}"
        if kind == 15:
            return f"({self.bool(depth - 1)} ? {self.bool(depth - 1)} : {self.bool(depth - 1)})"
        if kind == 16:
            return f'device.attributes["{r.choice(DOMAINS)}"].exists(k, k.startsWith("{r.choice("mcfi")}"))'
        if kind == 18:
            fn = r.choice(["contains", "intersects", "equivalent"])
            return f"sets.{fn}({self.attr()}, [{self.literal()}])"
        if kind == 19:
            macro = r.choice(["all", "exists", "existsOne"])
            return f"{self.attr()}.{macro}(i, v, {self.pred('v', depth - 1)})"
        if kind == 20:
            return f"{self.attr()}.transformList(i, v, v).size() {r.choice(['==', '<'])} {r.randint(0, 3)}"
        if kind == 21:
            return f'device.attributes["{r.choice(DOMAINS)}"].size() {r.choice(["==", ">"])} {r.randint(0, 4)}'
        return f"dyn({self.value(depth - 1)}) {r.choice(['==', '<', '>'])} dyn({self.value(depth - 1)})"

    def pred(self, var: str, depth: int) -> str:
        r = self.rng
        kind = r.randint(0, 4)
        if kind == 0:
            return f"{var} {r.choice(['==', '!=', '<', '>'])} {self.literal()}"
        if kind == 1:
            return f"{var}.size() > {r.randint(0, 3)}"
        if kind == 2:
            return f"{var} == {self.value(0)}"
        if kind == 3:
            return f"{var}.isGreaterThan(semver(\"{r.choice(VERSIONS)}\"))"
        return self.bool(max(depth, 0))

    def bind_body(self, depth: int) -> str:
        r = self.rng
        name = r.choice(NAMES)
        if r.random() < 0.5:
            return f"a.?{name}.hasValue() && {self.bool(max(depth, 0))}"
        return f"a.size() {r.choice(['==', '>'])} {r.randint(0, 3)} || has(a.{name})"


def generate(seed: int, expressions: int, devices: int) -> tuple[list[str], list[dict[str, Any]]]:
    """The seed's expressions and devices."""
    rng = random.Random(seed)
    made = [device(rng, i) for i in range(devices)]
    gen = Generator(rng)
    exprs: list[str] = []
    seen: set[str] = set()
    while len(exprs) < expressions:
        e = gen.bool(rng.randint(1, 4))
        if e not in seen and len(e) < 400:
            seen.add(e)
            exprs.append(e)
    return exprs, made
