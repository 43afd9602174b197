"""`gpustack report SPEC --target T --prometheus URL`: what ran, against what the plan assumed."""

from __future__ import annotations

import argparse
import sys

NAME = "report"
HELP = "measure what ran (Prometheus: floors, idle GPU-hours, node-hours per pool) and price recommendations"
ORDER = 35


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from gpustack.commands._shared import add_catalog_argument

    parser.add_argument("spec", help="the spec file")
    parser.add_argument("--target", required=True, help="the target whose cluster Prometheus watches")
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--prometheus", metavar="URL", help="the Prometheus HTTP API, e.g. http://prometheus:9090")
    source.add_argument("--input", metavar="DIR", help="read the answers --record DIR wrote instead of a server")
    parser.add_argument("--since", default="7d", metavar="DURATION", help="the window's length (default 7d)")
    parser.add_argument("--until", default="now", metavar="TIME",
                        help="the window's end: now (default) or RFC 3339, e.g. 2026-11-30T00:00:00Z (reproducible)")
    parser.add_argument("--step", default="1m", metavar="DURATION",
                        help="the resolution (default 1m; the scrape interval or longer)")
    parser.add_argument("--floor-quantile", type=_quantile, default=0.95, metavar="Q",
                        help="the floor is the largest replica count run in at least this share of steps (0.95)")
    parser.add_argument("--format", choices=("table", "json", "markdown", "html"), default="table")
    parser.add_argument("--bearer-token-file", metavar="FILE", help="send 'Authorization: Bearer <its content>'")
    parser.add_argument("--header", action="append", default=[], metavar="'Name: value'",
                        help="an HTTP header for every request (repeatable), e.g. for a managed Prometheus")
    parser.add_argument("--record", metavar="DIR", help="also write every answer into DIR, for --input")
    parser.add_argument("--write-spec", metavar="OUT",
                        help="write the spec with the recommendations applied (comments and order kept)")
    add_catalog_argument(parser)


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from gpustack.commands._shared import print_price_age, select_target
    from gpustack.errors import Problem, SpecError, UsageError
    from gpustack.files import FileRefused, read_limited, write_atomically
    from gpustack.plan import build_plan
    from gpustack.report.build import build_report
    from gpustack.report.client import PrometheusSource, RecordedSource, ReportError, parse_headers, read_token
    from gpustack.report.recommend import spec_planner
    from gpustack.report.specedit import SpecText
    from gpustack.report.window import make_window
    from gpustack.spec import load_text
    from gpustack.spec.yamlsource import MAX_FILE_BYTES

    window = make_window(args.since, args.until, args.step)
    if args.input is not None and (args.record or args.header or args.bearer_token_file):
        raise UsageError("--input reads recorded answers: --record, --header and --bearer-token-file are for "
                         "--prometheus")
    try:
        raw = read_limited(args.spec, MAX_FILE_BYTES, "spec file")
    except FileRefused as exc:
        raise SpecError([Problem(None, "", f"{args.spec}: {exc}")]) from None
    base_dir = Path(args.spec).parent
    spec = load_text(raw, args.spec, args.catalog, base_dir=base_dir)
    text = raw.decode("utf-8")  # load_text checked it is UTF-8
    plan = build_plan(spec)
    select_target(plan, args.target)  # an unknown target: located, with a did-you-mean
    print_price_age(select_target(plan, args.target))
    if args.prometheus is not None:
        token = read_token(args.bearer_token_file) if args.bearer_token_file else None
        source: PrometheusSource | RecordedSource = PrometheusSource(
            args.prometheus, parse_headers(args.header), token, Path(args.record) if args.record else None)
    else:
        source = RecordedSource(Path(args.input))
    planner = spec_planner(args.spec, args.catalog, base_dir, plan)
    report, priced = build_report(spec, text, plan, args.target, source, window, args.floor_quantile, planner)
    if args.write_spec is not None:
        changed = SpecText(text, spec.source).apply(priced.edits)
        load_text(changed, args.write_spec, args.catalog, base_dir=base_dir)  # what is written is a valid spec
        try:
            write_atomically(Path(args.write_spec), changed)
        except FileRefused as exc:
            raise ReportError(f"--write-spec: {exc}") from None
    if args.format == "json":
        sys.stdout.write(report.to_json())
    elif args.format == "markdown":
        from gpustack.report.markdown import render_markdown

        sys.stdout.write(render_markdown(report))
    elif args.format == "html":
        from gpustack.output.html_report import render_report_html

        sys.stdout.write(render_report_html(report))
    else:
        from gpustack.report.table import render_table

        sys.stdout.write(render_table(report))
    return 0


def _quantile(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a share of the steps: a number above 0 and at most 1")
    return value
