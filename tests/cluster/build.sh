#!/usr/bin/env bash
# Builds the real control plane used by the e2e tests and benchmarks, from the published Go modules:
#   etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kubectl (k8s.io/kubernetes at tests/cluster/VERSION)
#   helm (helm.sh/helm/v3 at HELM_VERSION below)
# into _build/bin/<release>/. A binary that is already there is not rebuilt.
#
# k8s.io/kubernetes cannot be `go install`ed: its go.mod maps every staging module (k8s.io/api, ...) to
# ./staging with replace directives, which only apply in the main module. So tests/cluster/k8s is our own
# consumer module that requires k8s.io/kubernetes and replaces each staging module with its published
# v0.<minor>.<patch> release. Its go.mod is generated from k8s.io/kubernetes' own go.mod (never hand-edited):
# when VERSION changes, this script regenerates go.mod/go.sum (commit them).
#
# Usage: bash tests/cluster/build.sh [--force] [--regen] [--no-helm]
#   --force    rebuild even if the binaries exist
#   --regen    regenerate tests/cluster/{k8s,helm}/go.mod and go.sum even if they match the pinned versions
#   --no-helm  skip helm
# Environment: PYSCHEDULER_BIN_DIR overrides the output directory.
set -euo pipefail

HELM_VERSION=v3.22.0

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
RELEASE=$(tr -d '[:space:]' <"$here/VERSION")
out=${PYSCHEDULER_BIN_DIR:-$repo/_build/bin/$RELEASE}

force=0 regen=0 helm=1
for arg in "$@"; do
    case $arg in
    --force) force=1 ;;
    --regen) regen=1 ;;
    --no-helm) helm=0 ;;
    *)
        echo "build.sh: unknown argument $arg" >&2
        exit 2
        ;;
    esac
done

if [[ ! $RELEASE =~ ^v1\.([0-9]+)\.([0-9]+)$ ]]; then
    echo "build.sh: tests/cluster/VERSION must hold a release like v1.37.2, got '$RELEASE'" >&2
    exit 2
fi
minor=${BASH_REMATCH[1]}
patch=${BASH_REMATCH[2]}
staging_version=v0.$minor.$patch

export CGO_ENABLED=0
# The GOFLAGS of the calling shell (e.g. -mod=vendor) must not change what is built.
export GOFLAGS=-buildvcs=false

log() { echo "build.sh: $*" >&2; }

# Half-built output goes to a temporary directory next to $out, removed whatever happens.
tmp_dirs=()
cleanup() { if ((${#tmp_dirs[@]})); then rm -rf "${tmp_dirs[@]}"; fi; }
trap cleanup EXIT

# required_version DIR MODULE: the version of MODULE that DIR/go.mod requires (empty if none).
required_version() {
    (cd "$1" && go mod edit -json 2>/dev/null) |
        python3 -c 'import json, sys
d = json.load(sys.stdin)
print(next((r["Version"] for r in d.get("Require") or [] if r["Path"] == sys.argv[1]), ""))' "$2"
}

# downloaded_gomod MODULE@VERSION: downloads the module and prints the path of its go.mod.
downloaded_gomod() {
    go mod download -json "$1" | python3 -c 'import json, sys; print(json.load(sys.stdin)["GoMod"])'
}

# go_directive GOMOD: the go version that go.mod file declares.
go_directive() {
    go mod edit -json "$1" | python3 -c 'import json, sys; print(json.load(sys.stdin)["Go"])'
}

generate_k8s_module() {
    local dir=$here/k8s gomod
    log "generating $dir/go.mod for k8s.io/kubernetes $RELEASE (staging modules at $staging_version)"
    gomod=$(downloaded_gomod "k8s.io/kubernetes@$RELEASE")
    (
        cd "$dir"
        rm -f go.mod go.sum
        go mod init pyscheduler.local/tests/cluster/k8s
        # The same go directive as k8s.io/kubernetes, so the same language version and GODEBUG defaults apply.
        go mod edit -go="$(go_directive "$gomod")"
        go mod edit -require="k8s.io/kubernetes@$RELEASE"
        # Every module that k8s.io/kubernetes maps into ./staging is replaced by its published release.
        go mod edit -json "$gomod" | python3 -c 'import json, sys
for r in json.load(sys.stdin).get("Replace") or []:
    if r["New"]["Path"].startswith("./staging/"):
        print(r["Old"]["Path"])' | while read -r module; do
            go mod edit -replace="$module=$module@$staging_version"
        done
        go mod tidy
    )
}

generate_helm_module() {
    local dir=$here/helm gomod
    log "generating $dir/go.mod for helm.sh/helm/v3 $HELM_VERSION"
    gomod=$(downloaded_gomod "helm.sh/helm/v3@$HELM_VERSION")
    (
        cd "$dir"
        rm -f go.mod go.sum
        go mod init pyscheduler.local/tests/cluster/helm
        go mod edit -go="$(go_directive "$gomod")"
        go mod edit -require="helm.sh/helm/v3@$HELM_VERSION"
        go mod tidy
    )
}

build_k8s() {
    local want=(etcd kube-apiserver kube-controller-manager kube-scheduler kubectl) missing=0 b tmp date ldflags
    for b in "${want[@]}"; do [[ -x $out/$b ]] || missing=1; done
    if ((!force && !missing)); then
        log "control plane $RELEASE already built in $out"
        return
    fi
    if ((regen)) || [[ ! -f $here/k8s/go.sum || $(required_version "$here/k8s" k8s.io/kubernetes) != "$RELEASE" ]]; then
        generate_k8s_module
    fi
    date=$(date -u +%Y-%m-%dT%H:%M:%SZ)
    ldflags="-s -w"
    for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
        ldflags+=" -X $pkg.gitVersion=$RELEASE -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
        ldflags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=$date"
    done
    tmp=$(mktemp -d "$out.tmp.XXXXXX")
    tmp_dirs+=("$tmp")
    log "building etcd, kube-{apiserver,controller-manager,scheduler} and kubectl $RELEASE into $out"
    local start=$SECONDS
    (
        cd "$here/k8s"
        go build -p 2 -trimpath -ldflags "$ldflags" -o "$tmp/" \
            go.etcd.io/etcd/server/v3 \
            k8s.io/kubernetes/cmd/kube-apiserver \
            k8s.io/kubernetes/cmd/kube-controller-manager \
            k8s.io/kubernetes/cmd/kube-scheduler \
            k8s.io/kubernetes/cmd/kubectl
    )
    # go names the binary of go.etcd.io/etcd/server/v3 after its last element before the major version.
    mv "$tmp/server" "$tmp/etcd"
    for b in "${want[@]}"; do mv -f "$tmp/$b" "$out/$b"; done
    log "control plane built in $((SECONDS - start)) s"
}

build_helm() {
    local tmp ldflags
    if ((!force)) && [[ -x $out/helm ]]; then
        log "helm already built in $out"
        return
    fi
    if ((regen)) || [[ ! -f $here/helm/go.sum || $(required_version "$here/helm" helm.sh/helm/v3) != "$HELM_VERSION" ]]; then
        generate_helm_module
    fi
    ldflags="-s -w -X helm.sh/helm/v3/internal/version.version=$HELM_VERSION"
    ldflags+=" -X helm.sh/helm/v3/internal/version.gitTreeState=clean"
    # As helm's Makefile does: the default Kubernetes version of `helm template`/lint follows client-go's.
    local client_go helm_k8s_minor
    client_go=$(cd "$here/helm" && go list -m -f '{{.Version}}' k8s.io/client-go)
    helm_k8s_minor=$(echo "$client_go" | cut -d. -f2)
    for pkg in helm.sh/helm/v3/pkg/lint/rules helm.sh/helm/v3/pkg/chartutil; do
        ldflags+=" -X $pkg.k8sVersionMajor=1 -X $pkg.k8sVersionMinor=$helm_k8s_minor"
    done
    tmp=$(mktemp -d "$out.tmp.XXXXXX")
    tmp_dirs+=("$tmp")
    log "building helm $HELM_VERSION into $out"
    local start=$SECONDS
    (cd "$here/helm" && go build -p 2 -trimpath -ldflags "$ldflags" -o "$tmp/helm" helm.sh/helm/v3/cmd/helm)
    mv -f "$tmp/helm" "$out/helm"
    log "helm built in $((SECONDS - start)) s"
}

mkdir -p "$out"
build_k8s
if ((helm)); then build_helm; fi
"$out/kube-apiserver" --version >&2
# Not `| head -n 1`: with pipefail, etcd's SIGPIPE would fail the script.
etcd_version=$("$out/etcd" --version)
echo "${etcd_version%%$'\n'*}" >&2
if ((helm)); then "$out/helm" version --short >&2; fi
