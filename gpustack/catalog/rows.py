"""Instance-type rows read from a catalog CSV, checked with located errors.

The bundled `data/instances.csv` and a user's catalog file have the same columns; a user file may
also carry `as_of` (the date its prices describe), which is required when the row's `source` is not
a key of the bundled `sources.yaml`. Every problem names the file, line, column, the value and what
is allowed, so a hand-written catalog is fixed in one pass.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import math
import re
from collections.abc import Callable, Iterable

from gpustack.errors import Location, Problem, did_you_mean, one_of, show

REQUIRED_COLUMNS = ("cloud", "region", "instance_type", "gpu", "gpus", "vcpus", "memory_gib", "on_demand_usd",
                    "spot_usd", "source")
# reserved_*: USD per node-hour under a 1- or 3-year reservation of the type (e.g. the Azure Retail
# Prices API's Reservation meters, spread over the term's hours); empty when not known.
OPTIONAL_COLUMNS = ("note", "as_of", "reserved_1y_usd", "reserved_3y_usd")
COLUMNS = REQUIRED_COLUMNS + OPTIONAL_COLUMNS
MAX_CATALOG_BYTES = 16 * 1024 * 1024
MAX_PRICE_USD = 10_000.0  # per node-hour; above any GPU instance sold today, below a typo of 100x

# Region and instance names reach YAML, Markdown and terminals: a closed alphabet, checked with fullmatch.
REGION = re.compile(r"[a-z0-9][a-z0-9-]{0,62}[a-z0-9]")
INSTANCE_TYPE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,79}")
AS_OF = re.compile(r"(19|20)\d\d-(0[1-9]|1[0-2])(-(0[1-9]|[12]\d|3[01]))?")
_PRINTABLE = re.compile(r"[^\x00-\x1f\x7f]*")
# What a header cell must look like to be echoed (as a column name): anything else is file content.
_COLUMN_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_ -]{0,39}")
MAX_UNKNOWN_SHOWN = 5


@dataclasses.dataclass(frozen=True)
class InstanceType:
    cloud: str
    region: str
    name: str
    gpu: str
    gpus: int
    vcpus: float
    memory_gib: float
    on_demand: float
    spot: float | None
    source: str
    note: str
    as_of: str = ""  # YYYY-MM or YYYY-MM-DD: the date the prices describe
    origin: str = "bundled"  # "bundled", or the user catalog file the row came from
    reserved_1y: float | None = None  # USD per node-hour with a 1-year reservation, when a source gives it
    reserved_3y: float | None = None
    # Where the spot price came from when not from `source`: a user row with an empty spot price keeps
    # the spot price of the row it replaces, credited to that row's source and date.
    spot_source: str = ""
    spot_as_of: str = ""

    @property
    def spot_cited(self) -> str:
        """The source of the spot price, as a price's source names it."""
        if not self.spot_source:
            return self.source
        return f"{self.spot_source} (spot price as of {self.spot_as_of or 'unknown'}, kept from the row replaced)"


@dataclasses.dataclass(frozen=True)
class Vocabulary:
    """What a row may name: clouds (with aliases), GPU models (with aliases), source keys with their dates."""

    clouds: Callable[[str], str | None]  # name or alias -> canonical name, None when unknown
    cloud_names: tuple[str, ...]
    gpus: Callable[[str], str | None]  # name or alias -> canonical model, None when unknown
    gpu_names: tuple[str, ...]
    source_dates: dict[str, str]  # source key -> as_of


def read_rows(text: str, file: str, words: Vocabulary, origin: str) -> tuple[tuple[InstanceType, ...], list[Problem]]:
    """The rows of a catalog CSV and the problems found (a row with a problem is left out)."""
    problems: list[Problem] = []
    lines = text.splitlines()
    reader = csv.reader(io.StringIO(text))
    try:
        header = next(reader)
    except StopIteration:
        return (), [Problem(Location(file, 1, 1), "", f"the catalog is empty; its first line names the columns: "
                                                       f"{','.join(REQUIRED_COLUMNS)}")]
    except csv.Error as exc:
        return (), [Problem(Location(file, 1, 1), "", f"not a CSV file ({exc})")]
    header = [h.strip() for h in header]
    if not _PRINTABLE.fullmatch("".join(header)):
        # Not a catalog (an environment block, a binary): say so without echoing any of it.
        return (), [Problem(Location(file, 1, 1), "", "the first line has control characters: not a catalog "
                                                       f"CSV; its first line names the columns: {','.join(REQUIRED_COLUMNS)}")]
    missing = [c for c in REQUIRED_COLUMNS if c not in header]
    unknown = [c for c in header if c not in COLUMNS]
    for name in unknown[:MAX_UNKNOWN_SHOWN]:
        # The field slot shows only what looks like a column name; anything else stays out of the message.
        shown = name if _COLUMN_NAME.fullmatch(name) else f"column {header.index(name) + 1}"
        problems.append(Problem(Location(file, 1, _column(lines[0], header.index(name))), shown,
                                f"{show(name, 40) if _COLUMN_NAME.fullmatch(name) else 'this cell'} is not a catalog "
                                f"column{did_you_mean(name, COLUMNS)}; columns: {one_of(COLUMNS)}"))
    if len(unknown) > MAX_UNKNOWN_SHOWN:
        problems.append(Problem(Location(file, 1, 1), "", f"{len(unknown) - MAX_UNKNOWN_SHOWN} more unknown "
                                                         "column(s)"))
    if missing:
        problems.append(Problem(Location(file, 1, 1), "", f"missing column(s) {one_of(missing)}; the first line "
                                                         f"names the columns: {','.join(REQUIRED_COLUMNS)}[,note,as_of]"))
    if problems:
        return (), problems
    rows: list[InstanceType] = []
    seen: dict[tuple[str, str, str], int] = {}
    try:
        for fields in reader:
            line = reader.line_num
            if not any(f.strip() for f in fields):
                continue
            row = _Row(file, line, lines[line - 1] if line <= len(lines) else "", header, fields, words, problems)
            parsed = row.parse(origin)
            if parsed is None:
                continue
            key = (parsed.cloud, parsed.region, parsed.name)
            if key in seen:
                problems.append(Problem(Location(file, line, 1), "instance_type",
                                        f"{parsed.cloud} {parsed.region} {parsed.name} is listed on line {seen[key]} "
                                        "too; one row per cloud, region and instance type"))
                continue
            seen[key] = line
            rows.append(parsed)
    except csv.Error as exc:
        problems.append(Problem(Location(file, reader.line_num, 1), "", f"not valid CSV ({exc})"))
    return tuple(rows), problems


def _column(line: str, index: int) -> int:
    """1-based character column of field `index` (exact for unquoted lines, which catalogs are)."""
    if '"' in line:
        return 1
    return sum(len(part) + 1 for part in line.split(",")[:index]) + 1


class _Row:
    def __init__(self, file: str, line: int, text: str, header: list[str], fields: list[str], words: Vocabulary,
                 problems: list[Problem]):
        self.file, self.line, self.text, self.words, self.problems = file, line, text, words, problems
        self.header = header
        self.values = {name: (fields[i].strip() if i < len(fields) else "") for i, name in enumerate(header)}
        self.count = len(fields)
        self.bad = False

    def problem(self, column: str, message: str) -> None:
        index = self.header.index(column) if column in self.header else 0
        self.problems.append(Problem(Location(self.file, self.line, _column(self.text, index)), column, message))
        self.bad = True

    def parse(self, origin: str) -> InstanceType | None:
        if self.count != len(self.header):
            self.problems.append(Problem(Location(self.file, self.line, 1), "",
                                         f"{self.count} fields where the header names {len(self.header)}"))
            return None
        v = self.values
        cloud = self.words.clouds(v["cloud"])
        if cloud is None:
            self.problem("cloud", f"{show(v['cloud'])} is not a cloud{did_you_mean(v['cloud'], self.words.cloud_names)};"
                                  f" known: {one_of(self.words.cloud_names)}")
        region = self.pattern("region", REGION, "a region name: lowercase letters, digits and '-' (e.g. eu-west-1)")
        name = self.pattern("instance_type", INSTANCE_TYPE,
                            "an instance type: letters, digits, '.', '_' and '-' (e.g. g5.xlarge)")
        gpu = self.words.gpus(v["gpu"])
        if gpu is None:
            self.problem("gpu", f"{show(v['gpu'])} is not a GPU model of the catalog"
                                f"{did_you_mean(v['gpu'], self.words.gpu_names)}; known: {one_of(self.words.gpu_names)}")
        gpus = self.whole("gpus", "GPUs per node")
        vcpus = self.positive("vcpus", "vCPUs per node")
        memory = self.positive("memory_gib", "GiB of memory per node")
        on_demand = self.price("on_demand_usd", required=True)
        spot = self.price("spot_usd", required=False)
        reserved = self.reserved_prices(on_demand)
        if on_demand is not None and spot is not None and spot > on_demand:
            self.problem("spot_usd", f"spot {spot:g} is more than on_demand_usd {on_demand:g}: spot capacity is "
                                     "sold below the on-demand price")
        source, note, as_of = self.provenance()
        if self.bad:
            return None
        assert cloud and gpu and gpus and vcpus and memory and on_demand is not None
        return InstanceType(cloud=cloud, region=region, name=name, gpu=gpu, gpus=gpus, vcpus=vcpus,
                            memory_gib=memory, on_demand=on_demand, spot=spot, source=source, note=note,
                            as_of=as_of, origin=origin, reserved_1y=reserved["reserved_1y_usd"],
                            reserved_3y=reserved["reserved_3y_usd"])

    def reserved_prices(self, on_demand: float | None) -> dict[str, float | None]:
        reserved: dict[str, float | None] = {}
        for column in ("reserved_1y_usd", "reserved_3y_usd"):
            price = self.price(column, required=False) if column in self.values else None
            reserved[column] = price
            if on_demand is not None and price is not None and price > on_demand:
                self.problem(column, f"{price:g} is more than on_demand_usd {on_demand:g}: a reservation is sold "
                                     "below the on-demand price")
        return reserved

    def provenance(self) -> tuple[str, str, str]:
        """The row's source, note and date (its own, else its source's in sources.yaml), each checked."""
        v = self.values
        source = v["source"]
        if not source:
            self.problem("source", "every row names its source (a URL, a document, or a key of the bundled "
                                   "sources.yaml)")
        elif not _PRINTABLE.fullmatch(source):
            self.problem("source", f"{show(source)} has control characters")
        note = v.get("note", "")
        if not _PRINTABLE.fullmatch(note):
            self.problem("note", f"{show(note)} has control characters")
        as_of = v.get("as_of", "") or self.words.source_dates.get(source, "")
        if "as_of" in v and v["as_of"] and not AS_OF.fullmatch(v["as_of"]):
            self.problem("as_of", f"{show(v['as_of'])} is not a date: YYYY-MM-DD or YYYY-MM (the date the prices "
                                  "describe)")
        elif source and not as_of:
            self.problem("as_of" if "as_of" in v else "source",
                         f"no date for source {show(source)}: give as_of (YYYY-MM-DD, the date the prices describe)"
                         " or a source key of the bundled sources.yaml")
        return source, note, as_of

    def pattern(self, column: str, pattern: re.Pattern[str], rule: str) -> str:
        value = self.values[column]
        if not pattern.fullmatch(value):
            self.problem(column, f"{show(value)} is not {rule}")
        return value

    def number(self, column: str, what: str) -> float | None:
        text = self.values[column]
        try:
            value = float(text)
        except ValueError:
            self.problem(column, f"{show(text)} is not a number ({what})")
            return None
        if not math.isfinite(value):
            self.problem(column, f"{show(text)} is not a finite number ({what})")
            return None
        return value

    def whole(self, column: str, what: str) -> int | None:
        value = self.number(column, what)
        if value is None:
            return None
        if value <= 0 or value != int(value):
            self.problem(column, f"{show(self.values[column])} is not a positive whole number of {what}")
            return None
        return int(value)

    def positive(self, column: str, what: str) -> float | None:
        value = self.number(column, what)
        if value is not None and value <= 0:
            self.problem(column, f"{show(self.values[column])} is not positive ({what})")
            return None
        return value

    def price(self, column: str, required: bool) -> float | None:
        if not self.values[column]:
            if required:
                self.problem(column, "the on-demand price is required (USD per node-hour)")
            return None
        value = self.number(column, "USD per node-hour")
        if value is not None and not 0 <= value <= MAX_PRICE_USD:
            self.problem(column, f"{show(self.values[column])} is outside 0..{MAX_PRICE_USD:g} USD per node-hour")
            return None
        return value


def write_rows(rows: Iterable[InstanceType]) -> str:
    """The catalog CSV of `rows` (sorted, every column, as_of on every row): what a refresh writes."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(COLUMNS)
    for r in sorted(rows, key=lambda r: (r.cloud, r.region, r.name)):
        writer.writerow([r.cloud, r.region, r.name, r.gpu, r.gpus, _num(r.vcpus), _num(r.memory_gib),
                         _num(r.on_demand), _opt(r.spot), r.source, r.note, r.as_of, _opt(r.reserved_1y),
                         _opt(r.reserved_3y)])
    return out.getvalue()


def _opt(value: float | None) -> str:
    return "" if value is None else _num(value)


def _num(value: float) -> str:
    return f"{value:.6f}".rstrip("0").rstrip(".") if value != int(value) else str(int(value))
