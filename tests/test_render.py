"""`gpustack render`: valid Kubernetes objects, golden files, byte-identical runs, atomic writes."""

from __future__ import annotations

import copy
import os
import re
import subprocess
import sys
from pathlib import Path

import jsonschema
import kubernetes_validate
import pytest
import yaml

from conftest import EXAMPLE, GOLDEN, ROOT, assert_golden, spec_text
from gpustack.cli import main
from gpustack.plan import build_plan
from gpustack.render import KUBERNETES_VERSION, in_cluster
from gpustack.render.files import MARKER, VALUES_FILE, render_files
from gpustack.render.operator import CHART_REPOSITORY, CHART_VERSION
from gpustack.spec import load_spec, load_text

EXAMPLE_PLAN = build_plan(load_spec(EXAMPLE))
TARGETS = [t.name for t in EXAMPLE_PLAN.targets]
SCHEMAS = Path(__file__).resolve().parent / "schemas"
CHARTS = Path(__file__).resolve().parent / "charts"  # charts' default values at the pinned tags
DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")
LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")


def _strict(schema):
    """A CRD schema as the API server would check it, refusing unknown fields (like kubernetes-validate
    strict) instead of pruning them."""
    schema = copy.deepcopy(schema)
    if isinstance(schema, dict):
        if isinstance(schema.get("pattern"), str) and schema["pattern"].startswith("^(?i)"):
            schema["pattern"] = "(?i)^" + schema["pattern"][5:]  # Go accepts the flag after ^, Python not
        if "properties" in schema and "additionalProperties" not in schema:
            schema["additionalProperties"] = False
        for key, value in list(schema.items()):
            if key != "metadata":
                schema[key] = _strict(value)
    elif isinstance(schema, list):
        schema = [_strict(s) for s in schema]
    return schema


CRD_SCHEMAS = {}
for _file in SCHEMAS.glob("*.yaml"):
    _doc = yaml.safe_load(_file.read_text())
    CRD_SCHEMAS[(f"{_doc['group']}/{_doc['version']}", _doc["kind"])] = _strict(_doc["openAPIV3Schema"])


def validate(obj: dict) -> None:
    key = (obj["apiVersion"], obj["kind"])
    if key in CRD_SCHEMAS:
        jsonschema.validate(obj, CRD_SCHEMAS[key])
    else:
        used = kubernetes_validate.validate(obj, KUBERNETES_VERSION, strict=True)
        assert used == KUBERNETES_VERSION.rsplit(".", 1)[0], "validated against another Kubernetes release"
    meta = obj["metadata"]
    assert DNS_SUBDOMAIN.match(meta["name"]) and len(meta["name"]) <= 253
    for key, value in meta.get("labels", {}).items():
        assert len(value) <= 63 and LABEL_VALUE.match(value), (key, value)


def extra_plans():
    """Specs beyond the example: MPS, several namespaces, a night window, every cloud."""
    workloads = [
        {"name": "nb", "kind": "notebook", "gpu": "L4", "gpu_fraction": 0.5, "replicas": 3, "namespace": "team-a",
         "schedule": {"days": "Mon-Fri", "hours": "22:00-06:00", "timezone": "America/New_York"}},
        {"name": "nb2", "kind": "notebook", "gpu": "L4", "gpu_fraction": 0.5, "replicas": 3, "namespace": "team-b",
         "schedule": {"days": "Mon-Fri", "hours": "22:00-06:00", "timezone": "America/New_York"}},
        {"name": "svc", "kind": "inference", "gpu": "L4", "gpu_fraction": 0.25, "sharing": "mps", "replicas": 4},
    ]
    return [build_plan(load_text(spec_text(workloads, (cloud,)), "spec.yaml")) for cloud in ("aws", "gcp")]


@pytest.mark.parametrize("plan, target", [(EXAMPLE_PLAN, t) for t in EXAMPLE_PLAN.targets]
                         + [(p, t) for p in extra_plans() for t in p.targets],
                         ids=TARGETS + ["extra-aws", "extra-gcp"])
def test_every_object_validates_strictly(plan, target):
    rendered = in_cluster(plan, target)
    assert rendered.objects
    for obj in rendered.objects:
        validate(obj)


def test_validation_would_catch_a_wrong_field():
    rendered = in_cluster(EXAMPLE_PLAN, EXAMPLE_PLAN.target("aws-prod"))
    cronjob = copy.deepcopy(next(o for o in rendered.objects if o["kind"] == "CronJob"))
    cronjob["spec"]["timezone"] = cronjob["spec"].pop("timeZone")
    with pytest.raises(Exception, match="timezone"):
        validate(cronjob)
    rule = copy.deepcopy(next(o for o in rendered.objects if o["kind"] == "PrometheusRule"))
    rule["spec"]["groups"][0]["rules"][0]["for"] = "15 minutes"
    with pytest.raises(jsonschema.ValidationError):
        validate(rule)
    rule["spec"]["groups"][0]["rules"][0]["for"] = "15m"
    rule["spec"]["groups"][0]["rules"][0]["severity"] = "warning"
    with pytest.raises(jsonschema.ValidationError):
        validate(rule)


@pytest.mark.golden
@pytest.mark.parametrize("target", TARGETS)
def test_rendered_files_match_golden(target):
    files = render_files(in_cluster(EXAMPLE_PLAN, EXAMPLE_PLAN.target(target)))
    for relative, text in files.items():
        assert_golden(f"render/{target}/{relative}", text)
    if not os.environ.get("GPUSTACK_UPDATE_GOLDEN"):
        root = GOLDEN / "render" / target
        on_disk = {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()}
        assert on_disk == set(files), "stale golden files: run `make golden`"


def test_two_renders_are_byte_identical(tmp_path):
    for target in TARGETS:
        assert main(["render", str(EXAMPLE), "--target", target, "--out", str(tmp_path / "a" / target)]) == 0
        assert main(["render", str(EXAMPLE), "--target", target, "--out", str(tmp_path / "b" / target)]) == 0
    first = {p.relative_to(tmp_path / "a"): p.read_bytes() for p in (tmp_path / "a").rglob("*") if p.is_file()}
    second = {p.relative_to(tmp_path / "b"): p.read_bytes() for p in (tmp_path / "b").rglob("*") if p.is_file()}
    assert first == second and len(first) > 20


def test_every_file_holds_one_object_with_the_generated_header():
    files = render_files(in_cluster(EXAMPLE_PLAN, EXAMPLE_PLAN.target("oci-prod")))
    for name, text in files.items():
        if name == MARKER:
            continue
        assert text.startswith("# Generated by `gpustack render --target oci-prod`")
        docs = list(yaml.safe_load_all(text))
        assert len(docs) == 1
        if name != VALUES_FILE:
            kind = docs[0]["kind"].lower()
            assert name == f"{name[:2]}-{kind}-" + "-".join(
                filter(None, [docs[0]["metadata"].get("namespace"), docs[0]["metadata"]["name"]])) + ".yaml"


def test_values_file_names_the_pinned_chart_and_install_command():
    files = render_files(in_cluster(EXAMPLE_PLAN, EXAMPLE_PLAN.target("aws-prod")))
    text = files[VALUES_FILE]
    assert (f"helm upgrade --install gpu-operator gpu-operator --repo {CHART_REPOSITORY} "
            f"--version {CHART_VERSION}") in text
    values = yaml.safe_load(text)
    assert values["driver"] == {"enabled": False} and values["toolkit"] == {"enabled": False}
    assert values["devicePlugin"]["config"] == {"name": "gpustack-device-plugin-config", "default": "default"}
    assert values["migManager"] == {"enabled": True, "config": {"name": "gpustack-mig-parted-config",
                                                                "default": "all-disabled"}}
    assert values["mig"] == {"strategy": "mixed"}
    # Spot nodes carry a taint; the operator's daemonsets must still run there.
    spot = {"key": "gpustack.dev/spot", "operator": "Exists", "effect": "NoSchedule"}
    assert spot in values["daemonsets"]["tolerations"]
    assert "&" not in text and "*id" not in text, "no YAML anchors"


def test_aks_operator_leaves_mig_partitioning_to_the_node_pool():
    values = yaml.safe_load(render_files(in_cluster(EXAMPLE_PLAN, EXAMPLE_PLAN.target("azure-prod")))[VALUES_FILE])
    assert values["migManager"] == {"enabled": False}
    # One profile per AKS pool: `single` exposes the slices as nvidia.com/gpu, so the autoscaler never
    # takes a partitioned node for a GPU node whose driver is not up.
    assert values["mig"] == {"strategy": "single"}


def test_gke_renders_no_operator(tmp_path):
    assert main(["render", str(EXAMPLE), "--target", "gcp-prod", "--out", str(tmp_path / "g")]) == 0
    names = sorted(p.name for p in (tmp_path / "g").iterdir())
    assert "helm" not in names and not any("gpu-operator" in n for n in names)
    assert any(n.startswith("40-cronjob-") for n in names) and any(n.startswith("50-prometheusrule-") for n in names)


# -- the command: where it writes, what it refuses, what an interruption leaves -------------------

def test_default_out_dir_is_rendered_slash_target(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["render", str(EXAMPLE), "--target", "aws-prod"]) == 0
    assert (tmp_path / "rendered" / "aws-prod" / MARKER).is_file()
    assert "rendered/aws-prod: 16 objects" in capsys.readouterr().out


def test_rerender_replaces_the_whole_directory(tmp_path):
    out = tmp_path / "out"
    assert main(["render", str(EXAMPLE), "--target", "aws-prod", "--out", str(out)]) == 0
    (out / "99-stale.yaml").write_text("old")
    assert main(["render", str(EXAMPLE), "--target", "aws-prod", "--out", str(out)]) == 0
    assert not (out / "99-stale.yaml").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"], "no temporary directories left"


def test_refuses_a_directory_gpustack_did_not_write(tmp_path, capsys):
    out = tmp_path / "manifests"
    out.mkdir()
    (out / "mine.yaml").write_text("keep me")
    assert main(["render", str(EXAMPLE), "--target", "aws-prod", "--out", str(out)]) == 2
    assert "was not written by `gpustack render`" in capsys.readouterr().err
    assert [p.name for p in out.iterdir()] == ["mine.yaml"]
    file_out = tmp_path / "afile"
    file_out.write_text("x")
    assert main(["render", str(EXAMPLE), "--target", "aws-prod", "--out", str(file_out)]) == 2
    assert file_out.read_text() == "x"


def test_an_interrupted_render_leaves_the_previous_output(tmp_path, monkeypatch):
    out = tmp_path / "out"
    assert main(["render", str(EXAMPLE), "--target", "aws-prod", "--out", str(out)]) == 0
    before = {p.name: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    written = []
    real_write = Path.write_text

    def flaky_write(self, *args, **kwargs):
        written.append(self)
        if len(written) == 4:
            raise KeyboardInterrupt
        return real_write(self, *args, **kwargs)

    monkeypatch.setattr(Path, "write_text", flaky_write)
    assert main(["render", str(EXAMPLE), "--target", "azure-prod", "--out", str(out)]) == 130
    monkeypatch.undo()
    assert {p.name: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_an_unwritable_destination_is_reported_not_a_crash(tmp_path, monkeypatch, capsys):
    import tempfile

    def denied(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(tempfile, "mkdtemp", denied)
    assert main(["render", str(EXAMPLE), "--target", "aws-prod", "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "cannot write" in err and "Permission denied" in err and "internal error" not in err


def test_unknown_target_and_missing_target_are_usage_errors(tmp_path, capsys):
    assert main(["render", str(EXAMPLE), "--target", "aws-prd", "--out", str(tmp_path / "x")]) == 2
    assert "did you mean 'aws-prod'" in capsys.readouterr().err
    assert not (tmp_path / "x").exists()
    with pytest.raises(SystemExit) as exit_info:
        main(["render", str(EXAMPLE)])
    assert exit_info.value.code == 2


def test_rendering_never_imports_pulumi(tmp_path):
    code = ("import sys; from gpustack.cli import main; "
            f"main(['render', {str(EXAMPLE)!r}, '--target', 'aws-prod', '--out', sys.argv[1]]); "
            "assert not [m for m in sys.modules if m.startswith('pulumi')], 'pulumi imported'")
    done = subprocess.run([sys.executable, "-c", code, str(tmp_path / "out")], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr


def _value_paths(values: dict, prefix: str = "") -> set[str]:
    """Dotted paths of the leaves of a values tree (a list is a leaf: Helm replaces it whole)."""
    paths: set[str] = set()
    for key, value in values.items():
        path = f"{prefix}{key}"
        paths |= _value_paths(value, path + ".") if isinstance(value, dict) and value else {path}
    return paths


def test_gpu_operator_is_pinned_to_the_current_release_with_only_keys_read_in_its_chart():
    from gpustack.clouds import CLOUDS
    from gpustack.render.operator import CHART_VALUE_KEYS, CHART_VALUES_SOURCE, operator_needed, values

    assert CHART_VERSION == "v26.7.0" and "/v26.7.0/" in CHART_VALUES_SOURCE
    plan = build_plan(load_spec(EXAMPLE))
    seen = set()
    for target in plan.targets:
        cloud = CLOUDS.get(target.cloud)
        if operator_needed(cloud):
            seen |= _value_paths(values(target, cloud))
    assert seen and seen <= CHART_VALUE_KEYS, sorted(seen - CHART_VALUE_KEYS)


def _chart_default(values: dict, path: str) -> object:
    node: object = values
    for part in path.split("."):
        assert isinstance(node, dict) and part in node, f"{path}: no {part!r} in the chart's values"
        node = node[part]
    return node


def test_every_value_gpustack_sets_is_a_key_of_the_pinned_chart_with_the_same_shape():
    """The chart's own values.yaml at the pinned tag: a renamed or moved key would be ignored by Helm
    without a word, so the operator would run with its default (e.g. its own driver on AKS)."""
    from gpustack.clouds import CLOUDS
    from gpustack.render.operator import _CONTROL_PLANE_TOLERATIONS, CHART_VALUE_KEYS, operator_needed, values

    chart = yaml.safe_load((CHARTS / f"gpu-operator-values-{CHART_VERSION}.yaml").read_text())
    for path in sorted(CHART_VALUE_KEYS):
        _chart_default(chart, path)
    plan = build_plan(load_spec(EXAMPLE))
    for target in plan.targets:
        cloud = CLOUDS.get(target.cloud)
        if not operator_needed(cloud):
            continue
        rendered = values(target, cloud)
        for path in _value_paths(rendered):
            ours, theirs = _chart_default(rendered, path), _chart_default(chart, path)
            assert type(ours) is type(theirs), (target.name, path, ours, theirs)
    # A list replaces the chart's whole default: the control-plane toleration NFD's worker has by
    # default is repeated, so it is the chart's.
    nfd_default = _chart_default(chart, "node-feature-discovery.worker.tolerations")
    assert isinstance(nfd_default, list) and all(t in nfd_default for t in _CONTROL_PLANE_TOLERATIONS)


def test_the_priority_expander_file_says_it_replaces_the_clusters_own_and_how_to_merge():
    files = render_files(in_cluster(EXAMPLE_PLAN, EXAMPLE_PLAN.target("aws-prod")))
    [name] = [n for n in files if "cluster-autoscaler-priority-expander" in n]
    text = files[name]
    assert "One per cluster" in text and "kubectl get configmap cluster-autoscaler-priority-expander -n kube-system" in text
    assert "`kubectl create -f` refuses to replace an existing one" in text
    assert yaml.safe_load(text)["data"]["priorities"]  # the comment is a comment
    others = [t for n, t in files.items() if n != name and n.endswith(".yaml")]
    assert others and not any("One per cluster" in t for t in others)


def test_leftovers_of_a_killed_render_are_cleaned_and_a_stranded_output_put_back(tmp_path):
    from gpustack.render.files import MARKER, recover_leftovers

    out = tmp_path / "out"
    assert main(["render", str(EXAMPLE), "--target", "aws-prod", "--out", str(out)]) == 0
    before = {p.name: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    # Killed between the two renames: the output only under .old, a half-written .new beside it.
    (out).rename(tmp_path / ".out.abcd1234.old")
    (tmp_path / ".out.zz99yy88.new").mkdir()
    (tmp_path / ".out.zz99yy88.new" / "10-namespace-x.yaml").write_text("half")
    (tmp_path / ".other.abcd1234.old").mkdir()  # not this output's: left alone
    recover_leftovers(out)
    assert {p.name: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before and (out / MARKER).is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == [".other.abcd1234.old", "out"]
    # The next render cleans what a run killed after the swap left too.
    (tmp_path / ".out.qqqq1111.old").mkdir()
    assert main(["render", str(EXAMPLE), "--target", "gcp-prod", "--out", str(out)]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == [".other.abcd1234.old", "out"]


def test_a_render_killed_between_the_renames_loses_no_output(tmp_path):
    """A real kill (no exception handler runs) in the two-rename fallback: the next run recovers."""
    out = tmp_path / "out"
    assert main(["render", str(EXAMPLE), "--target", "aws-prod", "--out", str(out)]) == 0
    code = (
        "import os, sys\n"
        "from gpustack.render import files\n"
        "files._exchange = lambda a, b: False\n"
        "real = os.rename\n"
        "calls = []\n"
        "def rename(a, b):\n"
        "    calls.append(a)\n"
        "    real(a, b)\n"
        "    if len(calls) == 1: os._exit(9)\n"
        "os.rename = rename\n"
        "from gpustack.cli import main\n"
        f"main(['render', {str(EXAMPLE)!r}, '--target', 'gcp-prod', '--out', {str(out)!r}])\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert result.returncode == 9, result.stderr
    assert not out.exists() and any(p.name.endswith(".old") for p in tmp_path.iterdir())
    assert main(["render", str(EXAMPLE), "--target", "gcp-prod", "--out", str(out)]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]
    assert "gcp-prod" in (out / ".gpustack-render").read_text()


def test_a_render_over_an_existing_output_swaps_atomically_where_the_system_can(tmp_path):
    from gpustack.render import files

    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir(), b.mkdir()
    (a / "x").write_text("a"), (b / "x").write_text("b")
    if not files._exchange(a, b):
        pytest.skip("no atomic exchange on this system")
    assert (a / "x").read_text() == "b" and (b / "x").read_text() == "a"
