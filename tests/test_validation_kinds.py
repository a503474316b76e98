"""The objects simulate reads for scheduling are refused as kube-apiserver refuses them, in its words
(tests/validation_samples.py; the same samples are checked against the real apiserver in
tests/e2e/test_input_validation.py)."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.framework.objects import KINDS
from scheduler.validation import validate
from tests.validation_samples import SAMPLES, one, pod

JSON = dict[str, Any]


@pytest.mark.parametrize(("obj", "expected"), [pytest.param(o, e, id=i) for i, o, e in SAMPLES])
def test_refused_with_the_apiservers_words(obj: JSON, expected: list[str]) -> None:
    """Exactly the apiserver's field errors (its order aside: Go walks maps in random order)."""
    kind = str(obj["kind"])
    namespaced = kind in ("Pod", "DaemonSet") or (kind in KINDS and KINDS[kind].namespaced)
    assert sorted(validate(obj, namespaced=namespaced)) == sorted(expected)


@pytest.mark.parametrize(
    "obj",
    [
        pytest.param(pod({"containers": one(resources={"requests": {"example.com/gpu": "2"},
                                                        "limits": {"example.com/gpu": "2"}})}), id="extended-equal"),
        pytest.param(pod({"containers": one(resources={"requests": {"nvidia.com/gpu": "1"},
                                                        "limits": {"nvidia.com/gpu": "1", "cpu": "1"}})}), id="gpu"),
        pytest.param(pod({"containers": [
            {"name": "c", "image": "x", "ports": [{"containerPort": 80, "hostPort": 80, "protocol": "TCP"}]},
            {"name": "d", "image": "x", "ports": [{"containerPort": 80, "hostPort": 80, "protocol": "UDP"}]},
        ]}), id="same-host-port-other-protocol"),
        pytest.param(pod({"resources": {"requests": {"cpu": "2"}, "limits": {"cpu": "2"}},
                          "containers": one(resources={"requests": {"cpu": "1"}})}), id="pod-level-within"),
        pytest.param(pod({"schedulingGates": [{"name": "example.com/wait"}], "containers": one()}), id="gate"),
    ],
)
def test_what_the_apiserver_accepts_passes(obj: JSON) -> None:
    """Valid neighbours of the refused samples give no error."""
    assert validate(obj) == []
