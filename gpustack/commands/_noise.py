"""How much a command says on stderr: warnings in two lines at a terminal, the detail with --verbose,
and the price-age warning once per CI job.

At a terminal a warning is at most two lines of the table's width: its first clauses, then
"(--verbose: the detail)"; `--verbose` prints it whole. In logs and pipes it is one line, whole,
where tools grep it.

The price-age warning is a fact of the day, the same for every command of a job. Where a job has
a directory of its own, it is said once in the job: `GPUSTACK_WARN_ONCE_DIR`, else GitHub Actions'
`RUNNER_TEMP`, "a temporary directory on the runner ... emptied at the beginning and end of each
job" (https://docs.github.com/en/actions/reference/workflows-and-actions/variables, default
environment variables). The first command that warns leaves a marker file there, named after the
warning's text, and later commands with the same warning stay quiet; a different warning (another
spec, another target) is still said. `GPUSTACK_WARN_ONCE_DIR=` (empty) turns this off.
"""

from __future__ import annotations

import hashlib
import os
import re
import textwrap

MAX_TERMINAL_LINES = 2
MORE = " (--verbose: the detail)"
_CLAUSE_END = re.compile(r"; |: | \(|, |\. ")
_VERBOSE = [False]


def set_verbose(verbose: bool) -> None:
    _VERBOSE[0] = verbose


def verbose() -> bool:
    return _VERBOSE[0]


def _wrapped(line: str, width: int) -> list[str]:
    return textwrap.wrap(line, width, subsequent_indent="  ", break_long_words=False, break_on_hyphens=False)


def for_terminal(line: str, width: int) -> str:
    """`line` wrapped to `width`, in at most two lines unless --verbose: cut after its last clause that
    fits, with a pointer to --verbose."""
    lines = _wrapped(line, width)
    if verbose() or len(lines) <= MAX_TERMINAL_LINES:
        return "\n".join(lines)
    start = line.find(": ") + 2  # "warning: " stays
    for cut in reversed([m.start() for m in _CLAUSE_END.finditer(line, start + 1)]):
        shorter = _wrapped(line[:cut] + MORE, width)
        if len(shorter) <= MAX_TERMINAL_LINES:
            return "\n".join(shorter)
    words, kept = line.split(" "), ""
    for word in words:  # no clause fits: as many words as do
        if len(_wrapped(f"{kept} {word}".strip() + MORE, width)) > MAX_TERMINAL_LINES:
            break
        kept = f"{kept} {word}".strip()
    return "\n".join(_wrapped(kept + MORE, width))


def first_in_job(text: str) -> bool:
    """Whether `text` has not been said yet in this CI job (always True outside one)."""
    folder = os.environ.get("GPUSTACK_WARN_ONCE_DIR", os.environ.get("RUNNER_TEMP", ""))
    if not folder or not os.path.isdir(folder):
        return True
    name = "gpustack-warned-" + hashlib.sha256(text.encode()).hexdigest()[:16]
    try:
        os.close(os.open(os.path.join(folder, name), os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
    except FileExistsError:
        return False
    except OSError:  # a folder we may not write: say it
        return True
    return True
