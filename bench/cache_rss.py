"""RSS of the scheduler's cache at startup density, in process: what each cached node and pod costs.

The same shape as bench/startup.py (`--nodes` Ready nodes in 3 zones, `--pods-per-node` bound pods with
requests and labels), but each object is the JSON the API server sends for it (managedFields included,
captured from the test control plane), decoded from its own text the way the watch decodes each event, fed
through the scheduler's event handlers and then dropped, as the live initial sync does. Prints the RSS
growth over an empty scheduler and the bytes per cached pod; run it before and after a change to what the
cache keeps of each object.

    .venv/bin/python -m bench.cache_rss --nodes 5000 --pods-per-node 30
"""

from __future__ import annotations

import argparse
import gc
import json
import time
import uuid

from scheduler.adapters.memory import MemoryCluster
from scheduler.core.profile import build_scheduler

# What kube-apiserver v1.37.2 returned for bench/startup.py's node (after its Ready status patch) and pod.
NODE = (
    '{"kind":"Node","apiVersion":"v1","metadata":{"name":"NAME","uid":"UID","resourceVersion":"219",'
    '"creationTimestamp":"2026-12-01T21:51:14Z","labels":{"kubernetes.io/hostname":"NAME",'
    '"topology.kubernetes.io/zone":"ZONE"},"managedFields":[{"manager":"kubectl-create","operation":"Update",'
    '"apiVersion":"v1","time":"2026-12-01T21:51:14Z","fieldsType":"FieldsV1","fieldsV1":{"f:metadata":'
    '{"f:labels":{".":{},"f:kubernetes.io/hostname":{},"f:topology.kubernetes.io/zone":{}}}}},{"manager":'
    '"kubectl-patch","operation":"Update","apiVersion":"v1","time":"2026-12-01T21:51:19Z","fieldsType":'
    '"FieldsV1","fieldsV1":{"f:status":{"f:allocatable":{".":{},"f:cpu":{},"f:ephemeral-storage":{},'
    '"f:memory":{},"f:pods":{}},"f:capacity":{".":{},"f:cpu":{},"f:ephemeral-storage":{},"f:memory":{},'
    '"f:pods":{}},"f:conditions":{".":{},"k:{\\"type\\":\\"Ready\\"}":{".":{},"f:lastHeartbeatTime":{},'
    '"f:lastTransitionTime":{},"f:message":{},"f:reason":{},"f:status":{},"f:type":{}}}}},"subresource":'
    '"status"}]},"spec":{},"status":{"capacity":{"cpu":"4","ephemeral-storage":"100Gi","memory":"32Gi",'
    '"pods":"110"},"allocatable":{"cpu":"4","ephemeral-storage":"100Gi","memory":"32Gi","pods":"110"},'
    '"conditions":[{"type":"Ready","status":"True","lastHeartbeatTime":"2026-12-01T21:51:19Z",'
    '"lastTransitionTime":"2026-12-01T21:51:19Z","reason":"KubeletReady","message":"bench fake node"}],'
    '"daemonEndpoints":{"kubeletEndpoint":{"Port":0}},"nodeInfo":{"machineID":"","systemUUID":"","bootID":"",'
    '"kernelVersion":"","osImage":"","containerRuntimeVersion":"","kubeletVersion":"","kubeProxyVersion":"",'
    '"operatingSystem":"","architecture":""}}}'
)
POD = (
    '{"kind":"Pod","apiVersion":"v1","metadata":{"name":"NAME","namespace":"startup","uid":"UID",'
    '"resourceVersion":"216","generation":1,"creationTimestamp":"2026-12-01T21:51:14Z","labels":{"app":"APP"},'
    '"managedFields":[{"manager":"kubectl-create","operation":"Update","apiVersion":"v1",'
    '"time":"2026-12-01T21:51:14Z","fieldsType":"FieldsV1","fieldsV1":{"f:metadata":{"f:labels":{".":{},'
    '"f:app":{}}},"f:spec":{"f:containers":{"k:{\\"name\\":\\"c\\"}":{".":{},"f:image":{},"f:imagePullPolicy":{},'
    '"f:name":{},"f:resources":{".":{},"f:requests":{".":{},"f:cpu":{},"f:memory":{}}},'
    '"f:terminationMessagePath":{},"f:terminationMessagePolicy":{}}},"f:dnsPolicy":{},"f:enableServiceLinks":{},'
    '"f:nodeName":{},"f:restartPolicy":{},"f:schedulerName":{},"f:securityContext":{},'
    '"f:terminationGracePeriodSeconds":{}}}}]},"spec":{"containers":[{"name":"c",'
    '"image":"registry.k8s.io/pause:3.10","resources":{"requests":{"cpu":"10m","memory":"32Mi"}},'
    '"terminationMessagePath":"/dev/termination-log","terminationMessagePolicy":"File",'
    '"imagePullPolicy":"IfNotPresent"}],"restartPolicy":"Always","terminationGracePeriodSeconds":0,'
    '"dnsPolicy":"ClusterFirst","nodeName":"NODE","securityContext":{},"schedulerName":"nobody",'
    '"tolerations":[{"key":"node.kubernetes.io/not-ready","operator":"Exists","effect":"NoExecute",'
    '"tolerationSeconds":300},{"key":"node.kubernetes.io/unreachable","operator":"Exists","effect":"NoExecute",'
    '"tolerationSeconds":300}],"priority":0,"enableServiceLinks":true,"preemptionPolicy":"PreemptLowerPriority"},'
    '"status":{"phase":"Pending","qosClass":"Burstable"}}'
)


def rss_bytes() -> int:
    """VmRSS of this process."""
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS in /proc/self/status")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods-per-node", type=int, default=30)
    args = parser.parse_args()
    scheduler = build_scheduler(MemoryCluster())
    gc.collect()
    before = rss_bytes()
    start = time.perf_counter()
    for i in range(args.nodes):
        name = f"s-{i:05d}"
        text = NODE.replace("NAME", name).replace("UID", str(uuid.uuid4())).replace("ZONE", f"zone-{i % 3}")
        scheduler.events.on_node_event("ADDED", json.loads(text))
        for j in range(args.pods_per_node):
            n = i * args.pods_per_node + j
            text = POD.replace("NAME", f"p-{n:06d}").replace("UID", str(uuid.uuid4()))
            text = text.replace("APP", f"a{n % 50}").replace("NODE", name)
            scheduler.events.on_pod_event("ADDED", json.loads(text))
    took = time.perf_counter() - start
    gc.collect()
    grown = rss_bytes() - before
    pods = args.nodes * args.pods_per_node
    assert scheduler.cache.pod_count() == pods and scheduler.cache.node_count() == args.nodes
    print(
        f"nodes={args.nodes} pods={pods} rss_growth_mib={grown / 2**20:.1f} "
        f"bytes_per_pod={grown / pods:.0f} feed_seconds={took:.1f}"
    )


if __name__ == "__main__":
    main()
