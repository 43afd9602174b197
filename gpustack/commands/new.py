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
        "(default: the git URL or https archive this gpustack was installed from, else a placeholder address "
        "to replace; the name gpustack on PyPI belongs to an unrelated project)",
    )
    parser.add_argument("--force", action="store_true",
                        help="write into a non-empty directory, overwriting the files gpustack generates")


def run(args: argparse.Namespace) -> int:
    import shlex
    import sys
    from pathlib import Path

    from gpustack.clouds import CLOUDS
    from gpustack.commands._package import checked_package, installed_requirement
    from gpustack.commands._project import SPEC, check_plans, project_name, render_project, write_project

    directory = Path(args.directory)
    name = project_name(directory, args.name)
    package = checked_package(args.package) if args.package else installed_requirement()
    files = render_project(name, args.cloud or CLOUDS.names(), package=package)
    check_plans(files)
    how = write_project(directory, files, args.force)
    print(f"{directory}: {how} a gpustack project ({len(files)} files)" if how == "created" else
          f"{directory}: wrote the {len(files)} files of a gpustack project")
    for path in files:
        print(f"  {path}")
    if package and not args.package:
        print(f"requirements.txt: gpustack from where this one was installed (--package chooses another): {package}")
    if package:
        print("Next:")
    else:
        print("warning: requirements.txt names gpustack by a placeholder address (the name gpustack on PyPI "
              "belongs to an unrelated project)", file=sys.stderr)
        print("Next: set where your team gets gpustack in requirements.txt and policies/requirements.txt "
              "(or use --package), then:")
    # The commands people paste: the directory quoted for the shell.
    print(f"  cd {shlex.quote(str(directory))} && python -m venv .venv && .venv/bin/pip install -r requirements.txt")
    print(f"  .venv/bin/gpustack plan {SPEC}")
    return 0

