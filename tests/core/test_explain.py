"""The explanation's text: every failing plugin per node, the numbers behind a shortage, values as YAML,
PreFilter in a few lines."""

from __future__ import annotations

from scheduler.core.explain import render_text
from scheduler.testing import expr, make_node, make_pod
from tests.core.test_fixes import Cluster


async def test_every_failing_plugin_of_a_node_is_shown() -> None:
    """Issue 22: n2 is cordoned and short of cpu; its group is named by the first rejecting plugin, and the
    cpu shortage (with its numbers) is in the text, not only in JSON."""
    cluster = Cluster(
        [make_node("n1").capacity(cpu="4"), make_node("n2").capacity(cpu="4").unschedulable()],
        [make_pod("u1").node("n1").req(cpu="2200m"), make_pod("u2").node("n2").req(cpu="2")],
    )
    text = render_text(await cluster.explain(make_pod("p").req(cpu="3")))
    lines = text.splitlines()
    at = lines.index("  1 node(s): NodeUnschedulable: node(s) were unschedulable  [n2]")
    assert lines[at + 1] == "      also fails: NodeResourcesFit: Insufficient cpu"
    assert "      n2: cpu: the pod requests 3, the node has 2 free (2 of 4 allocatable requested)" in lines
    assert "      n1: cpu: the pod requests 3, the node has 1800m free (2200m of 4 allocatable requested)" in lines


async def test_also_fails_counts_within_a_large_group() -> None:
    """In a group of several nodes, each other reason says on how many of them it also applies."""
    nodes = [make_node(f"t{i}").taint("k", "v").capacity(cpu="1") for i in range(3)] + [make_node("t3").taint("k", "v")]
    text = render_text(await Cluster(nodes).explain(make_pod("p").req(cpu="2")))
    assert "      also fails: NodeResourcesFit: Insufficient cpu on 3 of them [t0, t1, t2]" in text.splitlines()


async def test_memory_and_pod_count_numbers() -> None:
    """Memory in binary units; a full node's pod count against its allocatable pods."""
    cluster = Cluster(
        [make_node("m").capacity(memory="8Gi"), make_node("full").capacity(pods="1")],
        [make_pod("big").node("m").req(memory="6Gi"), make_pod("one").node("full")],
    )
    lines = render_text(await cluster.explain(make_pod("p").req(memory="4Gi"))).splitlines()
    assert "      m: memory: the pod requests 4Gi, the node has 2Gi free (6Gi of 8Gi allocatable requested)" in lines
    assert "      full: pods: the node runs 1 pod(s), its allocatable pods is 1" in lines


async def test_pre_filter_is_folded() -> None:
    """The PreFilter plugins with nothing to check are one line, those that passed another."""
    text = render_text(await Cluster([make_node("n")]).explain(make_pod("p").req(cpu="100m")))
    lines = text.splitlines()
    at = lines.index("PreFilter:")
    assert lines[at + 1] == "  passed: NodeName, NodeResourcesFit"
    assert lines[at + 2].startswith("  nothing to check for this pod (Skip): NodeAffinity, NodePorts, ")
    assert lines[at + 3].startswith("Nodes: ")
    assert "Skip (nothing" not in text


async def test_values_are_yaml_not_python() -> None:
    """A pinned pod's PreFilter narrowing and an affinity fix quote values as a manifest writes them."""
    cluster = Cluster([make_node("a").labels(arch="amd64"), make_node("b").labels(arch="amd64")])
    pod = make_pod("p").required_term([expr("arch", "In", ["arm64"])], [expr("metadata.name", "In", ["a"])])
    text = render_text(await cluster.explain(pod))
    assert "  NodeAffinity: only nodes [a]" in text
    assert "['" not in text
