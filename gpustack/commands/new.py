"""`gpustack new DIR`: a golden-path project (spec, Pulumi project and stacks, policies, CI workflow)."""

from __future__ import annotations

import argparse

NAME = "new"
HELP = "create a project: an example spec, its Pulumi stacks, the guardrail policies and a pull-request workflow"
ORDER = 60


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from gpustack.clouds import CLOUDS

    parser.add_argument("directory", help="where to create the project (a new or empty directory)")
    parser.add_argument("--cloud", action="append", choices=CLOUDS.names(), metavar="CLOUD",
                        help=f"a cloud to target ({', '.join(CLOUDS.names())}); repeat for several "
                             "(default: all of them)")
    parser.add_argument("--name", help="the spec and project name (default: from the directory name)")
    parser.add_argument(
        "--package",
        default="",
        help="how requirements.txt names gpustack, e.g. 'gpustack @ git+https://host/org/gpustack@v0.1.0' "
        "(default: a placeholder address to replace; the name gpustack on PyPI belongs to an unrelated project)",
    )
    parser.add_argument("--force", action="store_true",
                        help="write into a non-empty directory, overwriting the files gpustack generates")


def run(args: argparse.Namespace) -> int:
    import sys
    from pathlib import Path

    from gpustack.clouds import CLOUDS
    from gpustack.commands._project import check_plans, project_name, render_project, write_project

    directory = Path(args.directory)
    name = project_name(directory, args.name)
    files = render_project(name, args.cloud or CLOUDS.names(), package=args.package)
    check_plans(files)
    how = write_project(directory, files, args.force)
    print(f"{directory}: {how} a gpustack project ({len(files)} files)" if how == "created" else
          f"{directory}: wrote the {len(files)} files of a gpustack project")
    for path in files:
        print(f"  {path}")
    if not args.package:
        print("warning: requirements.txt names gpustack by a placeholder address: set where your team gets "
              "gpustack (a git URL or a wheel) there, or run again with --package; the name gpustack on PyPI "
              "belongs to an unrelated project", file=sys.stderr)
    first = ("" if args.package else
             "set where your team gets gpustack in requirements.txt and policies/requirements.txt, then ")
    print(f"Next: {first}cd {directory} && python -m venv .venv && .venv/bin/pip install -r requirements.txt && "
          ".venv/bin/gpustack plan stacks/gpustack.yaml")
    return 0
