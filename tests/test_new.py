"""`gpustack new DIR`: a golden-path project that validates and plans out of the box."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from conftest import ROOT
from gpustack import __version__
from gpustack.cli import main
from gpustack.clouds import CLOUDS
from gpustack.commands import _project
from gpustack.plan import build_plan
from gpustack.spec import load_spec

PULUMI_TEMPLATE = ROOT / "templates" / "pulumi" / "gpustack"
WORKFLOW = ".github/workflows/gpustack-preview.yml"


def tree(directory: Path) -> dict[str, bytes]:
    return {str(p.relative_to(directory)): p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file()}


def workflow_of(directory: Path) -> dict:
    return yaml.safe_load((directory / WORKFLOW).read_text())


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    directory = tmp_path_factory.mktemp("new") / "ml-platform"
    assert main(["new", str(directory)]) == 0
    return directory


def test_the_project_validates_and_plans_every_target(project):
    plan = build_plan(load_spec(project / "stacks" / "gpustack.yaml"))
    assert plan.name == "ml-platform"
    assert sorted(t.cloud for t in plan.targets) == sorted(CLOUDS.names())
    for target in plan.targets:
        assert target.pools
        assert target.cost.planned_monthly_usd < target.cost.baseline_monthly_usd  # the example saves money
        config = yaml.safe_load((project / "stacks" / f"Pulumi.{target.name}.yaml").read_text())["config"]
        assert config["gpustack:target"] == target.name
        assert (project / config["gpustack:spec"]).is_file()


def test_the_pulumi_project_runs_the_gpustack_program(project):
    pulumi = yaml.safe_load((project / "Pulumi.yaml").read_text())
    assert pulumi["runtime"]["name"] == "python" and pulumi["stackConfigDir"] == "stacks"
    assert "template" not in pulumi
    main_py = (project / "__main__.py").read_text()
    compile(main_py, "__main__.py", "exec")
    assert "from gpustack.program import main" in main_py
    extras = ",".join(CLOUDS.names())
    # Never the bare name (PyPI's "gpustack" is another project): a placeholder that fails loudly.
    assert f"gpustack[{extras}] @ git+https://git.example.invalid/set-me-with-gpustack-new-package@v{__version__}" \
        in (project / "requirements.txt").read_text().splitlines()


def test_the_policy_pack_calls_the_gpustack_guardrails(project):
    policies = project / "policies"
    assert yaml.safe_load((policies / "PulumiPolicy.yaml").read_text())["runtime"]["name"] == "python"
    source = (policies / "__main__.py").read_text()
    compile(source, "__main__.py", "exec")
    assert "from gpustack.guardrails.policy_pack import main" in source
    assert "gpustack[policy] @ git+https://git.example.invalid/" in (policies / "requirements.txt").read_text()


def test_the_workflow_reports_every_stack_and_previews_behind_an_environment(project):
    workflow = workflow_of(project)
    on = workflow.get("on", workflow.get(True))  # YAML 1.1 reads a bare `on` as true
    assert list(on) == ["pull_request"] and workflow["permissions"] == {}
    targets = [t.name for t in build_plan(load_spec(project / "stacks" / "gpustack.yaml")).targets]
    report, preview = workflow["jobs"]["report"], workflow["jobs"]["preview"]
    assert report["strategy"]["matrix"]["stack"] == targets
    assert report["permissions"] == {"contents": "read"}
    runs = "\n".join(s.get("run", "") for s in report["steps"])
    assert 'gpustack diff "$BASE_SHA:$SPEC" "$SPEC" --target "$STACK" --max-chars 60000' in runs
    assert 'gpustack check "$SPEC" --target "$STACK" --config policy-config.json' in runs
    assert "secrets." not in yaml.safe_dump(report)  # the job that runs the pull request's code has none
    assert [s["with"]["name"] for s in report["steps"] if "upload-artifact" in s.get("uses", "")] == \
        ["gpustack-report-${{ matrix.stack }}", "gpustack-page-${{ matrix.stack }}"]
    assert 'gpustack plan "$SPEC" --target "$STACK" --format html > gpustack-page/plan.html' in runs
    assert 'gpustack diff "$BASE_SHA:$SPEC" "$SPEC" --target "$STACK" --format html > gpustack-page/diff.html' in runs
    comment = (project / ".github" / "workflows" / "gpustack-comment.yml").read_text()
    assert "gpustack-page-${stack}" in comment and "${runUrl}/artifacts/${page.id}" in comment  # the comment links it
    assert [i["stack"] for i in preview["strategy"]["matrix"]["include"]] == targets
    assert preview["environment"] == _project.PREVIEW_ENVIRONMENT and preview["needs"] == "report"
    assert preview["permissions"] == {"contents": "read", "id-token": "write"}
    [pulumi] = [s for s in preview["steps"] if s.get("uses", "").startswith("pulumi/actions@")]
    assert pulumi["with"] == {"command": "preview", "stack-name": "${{ matrix.stack }}", "work-dir": ".",
                              "comment-on-pr": False, "comment-on-summary": True,
                              "policyPacks": ".gpustack-base/policies",
                              "policyPackConfigs": ".gpustack-base/policy-config.json"}
    [base] = [s for s in preview["steps"] if s.get("with", {}).get("path") == ".gpustack-base"]
    assert base["with"]["ref"] == "${{ github.event.pull_request.base.sha }}"  # the guardrails of the base branch
    for job in (report, preview):
        for step in job["steps"]:
            if "actions/checkout@" in step.get("uses", ""):
                assert step["with"]["persist-credentials"] is False


def test_the_comment_workflow_posts_the_report_as_data(project):
    workflow = yaml.safe_load((project / ".github/workflows/gpustack-comment.yml").read_text())
    on = workflow.get("on", workflow.get(True))
    assert on == {"workflow_run": {"workflows": [_project.REPORT_WORKFLOW], "types": ["completed"]}}
    assert workflow_of(project)["name"] == _project.REPORT_WORKFLOW
    [job] = workflow["jobs"].values()
    assert job["permissions"] == {"actions": "read", "pull-requests": "write"}
    uses = [s["uses"].split("@")[0] for s in job["steps"]]
    assert uses == ["actions/download-artifact", "actions/github-script"]  # no checkout: nothing of the PR runs
    script = job["steps"][1]["with"]["script"]
    assert "const LIMIT = 65536;" in script and "updateComment" in script and "createComment" in script
    assert "${{" not in script  # event data reaches the script through env, never spliced into code


def test_every_text_file_says_it_was_generated(project):
    for relative, content in tree(project).items():
        if relative.endswith(".json"):  # JSON has no comments
            continue
        assert b"generated by gpustack" in content.splitlines()[0], relative


def test_two_runs_give_identical_trees(project, tmp_path):
    again = tmp_path / "ml-platform"
    assert main(["new", str(again)]) == 0
    assert tree(again) == tree(project)


def test_one_cloud(tmp_path):
    directory = tmp_path / "gke-only"
    assert main(["new", str(directory), "--cloud", "gcp", "--name", "vision"]) == 0
    plan = build_plan(load_spec(directory / "stacks" / "gpustack.yaml"))
    assert (plan.name, [t.name for t in plan.targets]) == ("vision", ["gcp-prod"])
    assert "gpustack[gcp] @ " in (directory / "requirements.txt").read_text()
    assert workflow_of(directory)["jobs"]["report"]["strategy"]["matrix"]["stack"] == ["gcp-prod"]
    assert "aws-actions/" not in (directory / WORKFLOW).read_text()  # only the chosen cloud's login
    assert sorted(p.name for p in (directory / "stacks").iterdir()) == ["Pulumi.gcp-prod.yaml", "gpustack.yaml"]


def test_refuses_a_non_empty_directory_without_force(tmp_path, capsys):
    directory = tmp_path / "taken"
    directory.mkdir()
    (directory / "notes.txt").write_text("mine")
    assert main(["new", str(directory)]) == 2
    err = capsys.readouterr().err
    assert "is not empty" in err and "--force" in err
    assert tree(directory) == {"notes.txt": b"mine"}
    assert [p.name for p in tmp_path.iterdir()] == ["taken"]  # no temporary directory left behind


def test_force_overwrites_generated_files_and_keeps_the_others(tmp_path):
    directory = tmp_path / "taken"
    (directory / "stacks").mkdir(parents=True)
    (directory / "notes.txt").write_text("mine")
    (directory / "stacks" / "gpustack.yaml").write_text("old")
    assert main(["new", str(directory), "--force"]) == 0
    assert (directory / "notes.txt").read_text() == "mine"
    assert (directory / "stacks" / "gpustack.yaml").read_text().startswith("# generated by gpustack")
    assert [p.name for p in tmp_path.iterdir()] == ["taken"]


def test_an_empty_directory_is_used(tmp_path):
    directory = tmp_path / "empty"
    directory.mkdir()
    assert main(["new", str(directory)]) == 0
    assert (directory / "stacks" / "gpustack.yaml").is_file()


def test_a_fresh_git_repository_counts_as_empty(tmp_path):
    directory = tmp_path / "repo"
    (directory / ".git").mkdir(parents=True)
    (directory / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    assert main(["new", str(directory)]) == 0
    assert (directory / ".git" / "HEAD").read_text() == "ref: refs/heads/main\n"
    assert (directory / "stacks" / "gpustack.yaml").is_file()
    assert [p.name for p in tmp_path.iterdir()] == ["repo"]


def interrupt_after_writes(monkeypatch, count: int) -> None:
    """Ctrl-C in the middle of writing: the (count + 1)th file write raises KeyboardInterrupt."""
    written = []
    real_write = Path.write_text

    def failing_write(self, *args, **kwargs):
        if len(written) == count:
            raise KeyboardInterrupt
        written.append(self)
        return real_write(self, *args, **kwargs)

    monkeypatch.setattr(Path, "write_text", failing_write)


def test_an_interrupted_run_leaves_nothing_behind(tmp_path, monkeypatch):
    directory = tmp_path / "project"
    interrupt_after_writes(monkeypatch, 3)
    assert main(["new", str(directory)]) == 130
    assert not directory.exists()
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("args, message", [
    (["--name", "ML_Platform"], "--name 'ML_Platform': a spec name is a lowercase DNS label"),
    (["--cloud", "aks"], "invalid choice: 'aks'"),
])
def test_bad_arguments(tmp_path, capsys, args, message):
    with pytest.raises(SystemExit) if "--cloud" in args else _nothing():
        assert main(["new", str(tmp_path / "p"), *args]) == 2
    assert message in capsys.readouterr().err


def test_a_file_in_the_way(tmp_path, capsys):
    (tmp_path / "file").write_text("x")
    assert main(["new", str(tmp_path / "file")]) == 2
    assert "exists and is not a directory" in capsys.readouterr().err


def test_every_cloud_has_an_example_target():
    examples = _project.example_targets()
    assert set(examples) == set(CLOUDS.names())


def test_pulumi_new_template_is_the_rendered_project():
    """templates/pulumi/gpustack is `gpustack new` for every cloud, as a `pulumi new` template
    (`make templates` rewrites it)."""
    files = _project.render_pulumi_template()
    assert {k: v.encode() for k, v in files.items()} == tree(PULUMI_TEMPLATE), "run `make templates`"


def test_writing_the_template_drops_stale_files(tmp_path):
    (tmp_path / "old" / "gone.txt").parent.mkdir()
    (tmp_path / "old" / "gone.txt").write_text("stale")
    _project.write_pulumi_template(tmp_path)
    assert tree(tmp_path) == {k: v.encode() for k, v in _project.render_pulumi_template().items()}


def test_pulumi_new_template_has_a_template_block():
    pulumi = yaml.safe_load((PULUMI_TEMPLATE / "Pulumi.yaml").read_text())
    assert pulumi["name"] == "${PROJECT}" and pulumi["description"] == "${DESCRIPTION}"
    block = pulumi["template"]
    assert block["displayName"] and block["description"]
    assert block["config"]["gpustack:spec"]["default"] == "stacks/gpustack.yaml"
    assert block["config"]["gpustack:target"]["default"] in [f"{c}-prod" for c in CLOUDS.names()]
    build_plan(load_spec(PULUMI_TEMPLATE / "stacks" / "gpustack.yaml"))


def test_backstage_template_runs_pulumi_new():
    template = yaml.safe_load((ROOT / "templates" / "backstage" / "template.yaml").read_text())
    assert template["kind"] == "Template" and template["apiVersion"].startswith("scaffolder.backstage.io/")
    [new] = [s for s in template["spec"]["steps"] if s["action"] == "pulumi:new"]
    assert set(new["input"]) >= {"name", "organization", "stack", "template"}
    # No free-text template source: `pulumi new` would run a template of the user's choosing on the
    # server; and nothing is installed there.
    assert "template" not in template["spec"]["parameters"][0]["properties"]
    assert "${{" not in new["input"]["template"] and new["input"]["args"] == ["--generate-only"]
    for prop in template["spec"]["parameters"][0]["properties"].values():
        assert prop.get("pattern") or prop.get("enum"), prop
    stacks = template["spec"]["parameters"][0]["properties"]["stack"]["enum"]
    assert stacks == [f"{c}-prod" for c in CLOUDS.names()]


def test_backstage_template_is_rendered_from_the_registry():
    """templates/backstage/template.yaml lists a stack per cloud: `make templates` writes it."""
    on_disk = (ROOT / "templates" / "backstage" / "template.yaml").read_text(encoding="utf-8")
    assert on_disk == _project.render_backstage_template(), "run `make templates`"


class _nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


def test_package_option_pins_a_build_that_is_not_on_an_index(tmp_path):
    # The name `gpustack` on PyPI belongs to an unrelated project: teams pin a git URL or a wheel.
    from gpustack.cli import main

    assert main(["new", str(tmp_path / "p"), "--cloud", "gcp",
                 "--package", "gpustack @ git+https://git.example.com/platform/gpustack@v0.1.0"]) == 0
    assert (tmp_path / "p" / "requirements.txt").read_text().splitlines()[-1] == (
        "gpustack[gcp] @ git+https://git.example.com/platform/gpustack@v0.1.0")
    assert (tmp_path / "p" / "policies" / "requirements.txt").read_text().splitlines()[-1] == (
        "gpustack[policy] @ git+https://git.example.com/platform/gpustack@v0.1.0")


def test_an_interrupted_forced_run_leaves_the_previous_project_intact(tmp_path, monkeypatch):
    directory = tmp_path / "project"
    assert main(["new", str(directory), "--cloud", "aws"]) == 0
    before = {p.relative_to(directory): p.read_bytes() for p in directory.rglob("*") if p.is_file()}
    (directory / "stacks" / "gpustack.yaml").write_text("# edited by the team\n")
    before[Path("stacks/gpustack.yaml")] = b"# edited by the team\n"
    interrupt_after_writes(monkeypatch, 5)
    assert main(["new", str(directory), "--cloud", "gcp", "--force"]) == 130
    after = {p.relative_to(directory): p.read_bytes() for p in directory.rglob("*") if p.is_file()}
    assert after == before
    assert [p.name for p in tmp_path.iterdir()] == ["project"]


def test_the_generated_project_passes_its_own_guardrails(project, capsys):
    assert main(["check", str(project / "stacks" / "gpustack.yaml"), "--config",
                 str(project / "policy-config.json")]) == 0


def test_the_next_step_printed_works_as_generated(tmp_path, capsys):
    """Without --package, `pip install -r requirements.txt` fails on the placeholder: the printed next
    step says to set it first; with --package, the commands printed are the install itself, with the
    directory quoted for the shell."""
    import shlex

    assert main(["new", str(tmp_path / "a"), "--cloud", "aws"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[-3] == ("Next: set where your team gets gpustack in requirements.txt and policies/requirements.txt "
                       "(or use --package), then:")
    directory = tmp_path / "my project"
    assert main(["new", str(directory), "--cloud", "aws", "--package", "gpustack @ file:///dist/g.whl"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[-3:] == ["Next:", f"  cd {shlex.quote(str(directory))} && python -m venv .venv && .venv/bin/pip "
                        "install -r requirements.txt", "  .venv/bin/gpustack plan stacks/gpustack.yaml"]
    assert shlex.split(out[-2])[:2] == ["cd", str(directory)]
    assert max(map(len, out[-3:])) <= 120 or len(str(directory)) > 40
    readme = (tmp_path / "a" / "README.md").read_text()
    assert readme.index("replace the placeholder address") < readme.index("pip install -r requirements.txt")


COMMIT = "0123456789abcdef0123456789abcdef01234567"
SHA = "ab" * 32


@pytest.mark.parametrize("direct_url, requirement", [
    # pip install git+https://git.example.com/platform/gpustack@v0.1.0: the commit it resolved to
    ({"url": "https://git.example.com/platform/gpustack", "vcs_info": {"vcs": "git", "commit_id": COMMIT,
                                                                      "requested_revision": "v0.1.0"}},
     f"gpustack[aws] @ git+https://git.example.com/platform/gpustack@{COMMIT}"),
    ({"url": "ssh://git@git.example.com/platform/gpustack.git", "vcs_info": {"vcs": "git", "commit_id": COMMIT}},
     f"gpustack[aws] @ git+ssh://git@git.example.com/platform/gpustack.git@{COMMIT}"),
    ({"url": "https://files.example.com/gpustack-0.1.0-py3-none-any.whl",
      "archive_info": {"hashes": {"sha256": SHA}}},
     f"gpustack[aws] @ https://files.example.com/gpustack-0.1.0-py3-none-any.whl#sha256={SHA}"),
    # Nothing another machine can install from: the placeholder.
    ({"url": "file:///home/dev/gpustack", "dir_info": {"editable": True}}, None),
    ({"url": "file:///home/dev/dist/gpustack-0.1.0-py3-none-any.whl", "archive_info": {}}, None),
    ({"url": "https://ci:s3cret@git.example.com/platform/gpustack", "vcs_info": {"vcs": "git", "commit_id": COMMIT}},
     None),  # never a credential in a generated project
    ({"url": "https://git.example.com/mono", "vcs_info": {"vcs": "git", "commit_id": COMMIT},
      "subdirectory": "gpustack"}, None),
    ({"url": "https://git.example.com/x y", "vcs_info": {"vcs": "git", "commit_id": COMMIT}}, None),
])
def test_without_package_the_project_installs_gpustack_from_where_this_one_came_from(
        tmp_path, capsys, monkeypatch, direct_url, requirement):
    import json

    monkeypatch.setattr("gpustack.commands._package.installed_direct_url", lambda: json.dumps(direct_url))
    assert main(["new", str(tmp_path / "p"), "--cloud", "aws"]) == 0
    captured = capsys.readouterr()
    written = (tmp_path / "p" / "requirements.txt").read_text().splitlines()[-1]
    if requirement is None:
        assert "git.example.invalid" in written and "placeholder" in captured.err
    else:
        assert written == requirement and captured.err == ""
        assert captured.out.splitlines()[-3] == "Next:"
        assert (tmp_path / "p" / "policies" / "requirements.txt").read_text().splitlines()[-1] == (
            requirement.replace("[aws]", "[policy]"))


@pytest.mark.parametrize("package, message", [
    ("gpustack", "the name gpustack on PyPI belongs to an unrelated project"),
    ("gpustack[aws] @ git+https://git.example.com/gpustack", "no extras"),
    ("gpustack @ git+https://git.example.com/gpustack\n--index-url https://x", "expected gpustack at a git URL"),
    ("other @ https://files.example.com/other.whl", "expected gpustack at a git URL"),
])
def test_a_package_pip_cannot_install_as_gpustack_is_refused(tmp_path, capsys, package, message):
    assert main(["new", str(tmp_path / "p"), "--package", package]) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "p").exists()


def test_the_previews_doc_says_what_requirements_txt_holds(tmp_path):
    """docs/previews.md's row for requirements.txt agrees with what gpustack new writes."""
    from urllib.parse import urlsplit

    [row] = [line for line in (ROOT / "docs" / "previews.md").read_text().splitlines()
             if line.startswith("| `requirements.txt` |")]
    assert main(["new", str(tmp_path / "p"), "--cloud", "aws"]) == 0
    written = (tmp_path / "p" / "requirements.txt").read_text().splitlines()[-1]
    assert written.startswith("gpustack[aws] @ ") and "`gpustack[<clouds>]`" in row
    assert f"(`{urlsplit(written.split(' @ ')[1].removeprefix('git+')).hostname}`)" in row
    assert "==<this version>" not in row and "installed from" in row


def test_force_never_follows_a_symlinked_folder_out_of_the_directory(tmp_path, capsys):
    directory, outside = tmp_path / "project", tmp_path / "elsewhere"
    assert main(["new", str(directory), "--cloud", "aws"]) == 0
    capsys.readouterr()
    outside.mkdir()
    (outside / "keep.txt").write_text("theirs")
    import shutil

    shutil.rmtree(directory / ".github")
    (directory / ".github").symlink_to(outside, target_is_directory=True)
    before = {p.relative_to(directory): p.read_bytes() for p in directory.rglob("*") if p.is_file()}
    assert main(["new", str(directory), "--cloud", "gcp", "--force"]) == 2
    err = capsys.readouterr().err
    assert f"{directory / '.github'}: is a symbolic link" in err and "will not follow it" in err
    assert sorted(p.name for p in outside.iterdir()) == ["keep.txt"]  # nothing written out of the directory
    assert {p.relative_to(directory): p.read_bytes() for p in directory.rglob("*") if p.is_file()} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["elsewhere", "project"]
