"""The golden-path project of `gpustack new`: rendered from templates/project/, checked, written atomically.

The tree is rendered in memory, its spec validated and planned (a project that does not plan out of
the box is a bug), then written to a temporary directory next to the destination and renamed into
place, so an interrupted run never leaves a half-written project.
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import yaml

from gpustack import __version__
from gpustack.clouds import CLOUDS
from gpustack.clouds.base import ExampleTarget, Feature
from gpustack.errors import UsageError
from gpustack.output.jinja import GENERATED_BY, render, template_root

SPEC = "stacks/gpustack.yaml"
# Output path -> template under templates/project/ (GitHub's folder is `.github`, a name Python
# packaging skips, so its template lives under `github/`).
FILES = {
    "README.md": "README.md.j2",
    "Pulumi.yaml": "Pulumi.yaml.j2",
    "__main__.py": "__main__.py.j2",
    "requirements.txt": "requirements.txt.j2",
    ".gitignore": "gitignore.j2",
    SPEC: "stacks/gpustack.yaml.j2",
    "policies/PulumiPolicy.yaml": "policies/PulumiPolicy.yaml.j2",
    "policies/requirements.txt": "policies/requirements.txt.j2",
    "policies/__main__.py": "policies/__main__.py.j2",
    ".github/workflows/gpustack-preview.yml": "github/workflows/gpustack-preview.yml.j2",
    ".github/workflows/gpustack-comment.yml": "github/workflows/gpustack-comment.yml.j2",
    "policy-config.json": "policy-config.json.j2",
}
STACK_TEMPLATE = "stacks/Pulumi.stack.yaml.j2"
# The name `gpustack` on PyPI belongs to an unrelated project, so a generated project never names gpustack
# by its bare name: without --package it gets this address, which fails loudly at `pip install` until
# the team puts where it gets gpustack (a git URL or a wheel).
PLACEHOLDER_PACKAGE = f"gpustack @ git+https://git.example.invalid/set-me-with-gpustack-new-package@v{__version__}"
# The GitHub Environment that gates `pulumi preview` (required reviewers, OIDC subject) and the name of
# the report workflow, which the comment workflow's `workflow_run` trigger names.
PREVIEW_ENVIRONMENT = "gpustack-preview"
REPORT_WORKFLOW = "gpustack report"
# GitHub refuses a comment body over 65,536 characters
# (https://github.com/orgs/community/discussions/41331); the report leaves room for the marker.
COMMENT_LIMIT = 65_536
REPORT_CHARS = 60_000
_DNS_LABEL = re.compile(r"[a-z]([-a-z0-9]{0,18}[a-z0-9])?")


def example_targets() -> dict[str, ExampleTarget]:
    """The example target of each cloud (`Cloud.example`, in its bundle)."""
    return {cloud.name: cloud.example for cloud in CLOUDS}


def pinned_actions() -> dict[str, str]:
    """Action key -> `owner/repo@<commit> # <version>` (templates/project/github/actions.yaml)."""
    text = template_root().joinpath("project", "github", "actions.yaml").read_text(encoding="utf-8")
    return {key: f"{a['repo']}@{a['commit']}  # {a['version']}" for key, a in yaml.safe_load(text).items()}


def preview_logins(clouds: Iterable[str]) -> list[dict[str, Any]]:
    """Each cloud's read-only login of the preview job, as the workflow template lays it out."""
    actions = pinned_actions()
    out = []
    for name in clouds:
        login = CLOUDS.get(name).preview_login
        if login is None:
            continue
        when = f"matrix.cloud == '{name}'"
        out.append({"cloud": name, "title": login.title, "uses": actions[login.action] if login.action else None,
                    "inputs": list(login.inputs.items()), "note": login.note, "secrets": login.secrets,
                    "env": [(key, "${{ " + f"{when} && {value} || ''" + " }}") for key, value in login.env.items()]})
    return out


def project_name(directory: Path, name: str | None) -> str:
    if name is None:
        name = re.sub(r"[^a-z0-9]+", "-", directory.resolve().name.lower()).strip("-")[:20].strip("-") or "gpu-platform"
        if not name[0].isalpha():
            name = ("p-" + name)[:20].rstrip("-")
    if not _DNS_LABEL.fullmatch(name):
        raise UsageError(f"--name {name!r}: a spec name is a lowercase DNS label of at most 20 characters "
                         "(letters, digits and '-', starting with a letter), e.g. 'ml-platform'")
    return name


def render_project(name: str, clouds: Iterable[str], pulumi_template: bool = False,
                   package: str = "") -> dict[str, str]:
    """Every file of the project: relative path -> text.

    `package` is how the project's requirements name gpustack (extras added; default: a placeholder
    address that `pip install` refuses); a git URL or a wheel pins a build that is not on a package index.
    """
    examples = example_targets()
    chosen = [c for c in CLOUDS.names() if c in set(clouds)]
    targets = [_target(cloud, examples[cloud]) for cloud in chosen]
    header = f"{GENERATED_BY} {__version__}"
    logins = preview_logins(chosen)
    context = {
        "header": header,
        "name": name,
        "title": "${PROJECT}" if pulumi_template else name,  # `pulumi new` fills in ${PROJECT}
        "version": __version__,
        "pulumi_template": pulumi_template,
        "targets": targets,
        "target_names": ", ".join(t["name"] for t in targets),
        "first_target": targets[0]["name"],
        "stacks": ", ".join(t["name"] for t in targets),
        "clouds": ", ".join(CLOUDS.get(c).display_name for c in chosen),
        "extras": ",".join(chosen),
        "requirement": with_extras(package or PLACEHOLDER_PACKAGE, ",".join(chosen)),
        "policy_requirement": with_extras(package or PLACEHOLDER_PACKAGE, "policy"),
        "package_given": bool(package),
        "spec": SPEC,
        "actions": pinned_actions(),
        "environment": PREVIEW_ENVIRONMENT,
        "report_workflow": REPORT_WORKFLOW,
        "comment_chars": REPORT_CHARS,
        "comment_limit": COMMENT_LIMIT,
        "stacks_js": ", ".join(f'"{t["name"]}"' for t in targets),
        "logins": logins,
        # Where the auto-stop is the in-cluster CronJobs: the default provisioner has no native schedule.
        "in_cluster_autostop": in_words([CLOUDS.get(c).display_name for c in chosen
                                         if CLOUDS.get(c).provisioner().gap(Feature.NATIVE_SCHEDULE)]),
        "login_env": [(key, value) for login in logins for key, value in login["env"]],
    }
    files = {path: render(f"project/{template}", **context) for path, template in FILES.items()}
    for t in targets:
        files[f"stacks/Pulumi.{t['name']}.yaml"] = render(f"project/{STACK_TEMPLATE}", header=header,
                                                          target=t["name"], provider_config=t["provider_config"])
    return dict(sorted(files.items()))


def in_words(items: list[str]) -> str:
    """'A, B and C'."""
    return " and ".join(filter(None, [", ".join(items[:-1]), *items[-1:]]))


def with_extras(requirement: str, extras: str) -> str:
    """'gpustack==0.1.0' + 'aws,gcp' -> 'gpustack[aws,gcp]==0.1.0' (also for 'name @ url' forms)."""
    match = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)(.*)", requirement)
    if not match:
        raise UsageError(f"--package {requirement!r} is not a requirement such as 'gpustack==0.1.0'")
    return f"{match.group(1)}[{extras}]{match.group(2)}"


def render_pulumi_template() -> dict[str, str]:
    """The project as a `pulumi new` template (templates/pulumi/gpustack/): every cloud, and a
    Pulumi.yaml with a `template:` block."""
    return render_project("gpu-platform", CLOUDS.names(), pulumi_template=True)


BACKSTAGE = "backstage/template.yaml"


def render_backstage_template() -> str:
    """templates/backstage/template.yaml: the Backstage software template, one stack per cloud (the
    example targets of the shipped `pulumi new` template)."""
    stacks = [_target(cloud.name, cloud.example)["name"] for cloud in CLOUDS]
    return render(f"{BACKSTAGE}.j2", stacks=", ".join(stacks), first_stack=stacks[0],
                  clouds=in_words([cloud.display_name for cloud in CLOUDS]))


def write_templates(root: Path) -> None:
    """`make templates`: the shipped templates under `root` (the repository's templates/) that are
    rendered from the registry: the `pulumi new` template and the Backstage template."""
    write_pulumi_template(root / "pulumi" / "gpustack")
    (root / BACKSTAGE).write_text(render_backstage_template(), encoding="utf-8")


def write_pulumi_template(root: Path) -> None:
    """Rewrite the shipped `pulumi new` template under `root` wholesale (`make templates`): files the
    project no longer has go away."""
    files = render_pulumi_template()
    for stale in sorted(p for p in root.rglob("*") if p.is_file() and str(p.relative_to(root)) not in files):
        stale.unlink()
    for relative, text in files.items():
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_text(text, encoding="utf-8")
    for folder in sorted((p for p in root.rglob("*") if p.is_dir()), reverse=True):
        if not any(folder.iterdir()):
            folder.rmdir()


def _target(cloud: str, example: ExampleTarget) -> dict[str, Any]:
    settings = [f"{key}: {_flow(value)}" for key, value in example.settings.items()]
    return {"name": f"{cloud}-prod", "cloud": cloud, "region": example.region, "cluster": example.cluster,
            "settings": settings, "provider_config": sorted(example.provider_config.items())}


def _flow(value: object) -> str:
    return "[" + ", ".join(str(v) for v in value) + "]" if isinstance(value, (list, tuple)) else str(value)


def check_plans(files: Mapping[str, str]) -> None:
    """The generated spec validates and plans (else gpustack has a bug: fail before writing)."""
    from gpustack.plan import build_plan
    from gpustack.spec import load_text

    build_plan(load_text(files[SPEC], SPEC))


def _staging_directory(parent: Path, name: str) -> Path:
    """A new hidden directory next to the destination (same file system, so renames are atomic)."""
    for _ in range(100):
        path = parent / f".{name}.gpustack-new-{secrets.token_hex(4)}"
        try:
            path.mkdir()  # the usual permissions (the umask applies), unlike tempfile.mkdtemp's 0700
            return path
        except FileExistsError:
            continue
    raise UsageError(f"{parent}: cannot create a temporary directory there")  # pragma: no cover


def _refuse_links(directory: Path, relative: str) -> None:
    """UsageError when a folder on the way from `directory` to `relative` is a symbolic link."""
    path = directory
    for part in Path(relative).parts[:-1]:
        path = path / part
        if path.is_symlink():
            raise UsageError(f"{path}: is a symbolic link; gpustack writes only inside {directory} and will not "
                             "follow it: remove the link (or choose another directory) and run again")


def write_project(directory: Path, files: Mapping[str, str], force: bool) -> str:
    """Write `files` under `directory`; returns how ('created' or 'written')."""
    existing = directory.exists()
    if existing and not directory.is_dir():
        raise UsageError(f"{directory}: exists and is not a directory")
    contents = [p.name for p in directory.iterdir()] if existing else []
    non_empty = any(name != ".git" for name in contents)  # a fresh `git init` counts as empty
    if non_empty and not force:
        raise UsageError(f"{directory}: is not empty; choose an empty or new directory, or pass --force to "
                         "overwrite the files gpustack generates (others are left alone)")
    parent = directory.resolve().parent
    if not parent.is_dir():
        raise UsageError(f"{directory}: its parent directory {parent} does not exist")
    staging = _staging_directory(parent, directory.resolve().name)
    try:
        for relative, text in files.items():
            path = staging / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        if not contents:
            if existing:
                directory.rmdir()  # empty: replaced by the complete tree in one rename
            os.rename(staging, directory)
            return "created"
        # A directory with other files (a git repository, or anything with --force): each generated
        # file replaces its old version in one rename; the other files stay as they are. Nothing is
        # written through a symbolic link (a `.github` linked elsewhere would take the files out of
        # the directory): checked for every file before the first is replaced.
        for relative in files:
            _refuse_links(directory, relative)
        for relative in files:
            target = directory / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(staging / relative, target)
        return "written"
    finally:
        shutil.rmtree(staging, ignore_errors=True)
