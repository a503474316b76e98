"""Command line: ``python -m tests.image build [--tag TAG] [--base IMAGE] [--save FILE]``.

Builds the repository's Dockerfile with podman and no registry (see tests/image/build.py), prints the image's
size, each step's time and the Python distributions it holds. ``--save`` writes the image as an OCI archive
(``podman load -i FILE`` or ``skopeo copy oci-archive:FILE docker://REGISTRY/...`` take it elsewhere).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tests.image.build import DEFAULT_TAG, build_image, missing_build_tools
from tests.image.inventory import python_distributions
from tests.image.podman import Podman


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.image", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    build = commands.add_parser("build", help="build the image into this checkout's podman store")
    build.add_argument("--tag", default=DEFAULT_TAG, help=f"image name (default {DEFAULT_TAG})")
    build.add_argument("--base", help="base image already in the store, instead of the mmdebstrap-made one")
    build.add_argument("--save", type=Path, help="also write the image to this OCI archive")
    args = parser.parse_args(argv)

    missing = missing_build_tools()
    if missing:
        what = ", ".join(f"{program} ({package})" for program, package in missing.items())
        print(f"missing: {what}; bash scripts/setup.sh installs them", file=sys.stderr)
        return 2
    podman = Podman()
    report = build_image(podman, tag=args.tag, base=args.base)
    print(report.summary())
    print("Python distributions in /opt/venv:")
    for name, version in python_distributions(podman, args.tag):
        print(f"  {name}=={version}")
    if args.save:
        podman.run("save", "--format", "oci-archive", "--output", str(args.save), args.tag, timeout=600)
        print(f"saved to {args.save}")
    print(f"run it: {' '.join(podman.argv('run', '--rm', args.tag, '--help'))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
