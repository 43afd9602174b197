"""How a generated project's requirements name gpustack.

The name `gpustack` on PyPI belongs to an unrelated project, so a project never names gpustack by its
bare name. `--package` says where the team gets it; without it, the address this gpustack was
installed from, when another machine installs from it the same way: a git URL at the commit, or an
archive at an https URL (PEP 610's direct_url.json, which pip writes beside the installed package:
https://packaging.python.org/en/latest/specifications/direct-url-data-structure/). A local folder, a
local file, an editable checkout or an index give no such address: the project gets a placeholder.
"""

from __future__ import annotations

import json
import re
from typing import Any
from urllib.parse import urlsplit

from gpustack.errors import UsageError

_SPECIFIER = r"(===|==|~=|!=|<=|>=|<|>) *[0-9A-Za-z.*+!]+"
_URL = r"(git\+https|git\+ssh|https|file)://[A-Za-z0-9._~:/?#@!$&+,=%-]+"
# What --package may be, and what requirements.txt then holds (extras are added per project).
REQUIREMENT = re.compile(rf"gpustack *(@ *{_URL}|{_SPECIFIER}( *, *{_SPECIFIER})*)")
_COMMIT = re.compile(r"[0-9a-f]{40}")
_HASH = re.compile(r"(sha256|sha384|sha512)=[0-9a-f]{64,128}")


def checked_package(package: str) -> str:
    """`--package` as written, or a usage error saying what it may be."""
    if REQUIREMENT.fullmatch(package):
        return package
    why = ("the name gpustack on PyPI belongs to an unrelated project, so give where your team gets it"
           if package.strip() == "gpustack" else
           "expected gpustack at a git URL or an archive (no extras: each project gets its clouds' extras), "
           "or gpustack with a version from your own index")
    raise UsageError(f"--package {package!r}: {why}, e.g. 'gpustack @ git+https://git.example.com/platform/"
                     "gpustack@v0.1.0', 'gpustack @ https://files.example.com/gpustack-0.1.0-py3-none-any.whl' "
                     "or 'gpustack==0.1.0'")


def installed_direct_url() -> str | None:
    """The direct_url.json of the installed gpustack (None when it came from an index or a checkout on
    the path)."""
    from importlib import metadata

    try:
        return metadata.distribution("gpustack").read_text("direct_url.json")
    except metadata.PackageNotFoundError:
        return None


def installed_requirement() -> str:
    """Where this gpustack was installed from, as a requirement another machine can install; '' when
    there is none."""
    return portable_requirement(installed_direct_url())


def portable_requirement(direct_url: str | None) -> str:
    """A direct_url.json as a requirement for other machines, or '' (a local path, credentials, a
    subdirectory, anything unexpected)."""
    try:
        data: Any = json.loads(direct_url) if direct_url else None
    except ValueError:
        return ""
    if not isinstance(data, dict) or not isinstance(data.get("url"), str) or "subdirectory" in data:
        return ""
    url: str = data["url"]
    parts = urlsplit(url)
    vcs, archive = data.get("vcs_info"), data.get("archive_info")
    if isinstance(vcs, dict) and vcs.get("vcs") == "git" and _COMMIT.fullmatch(str(vcs.get("commit_id"))):
        # https without user info; ssh as the conventional `git` user (a key, never a password)
        anonymous = parts.username is None if parts.scheme == "https" else parts.username in (None, "git")
        if parts.scheme not in ("https", "ssh") or not anonymous or parts.password:
            return ""
        requirement = f"gpustack @ git+{url}@{vcs['commit_id']}"
    elif isinstance(archive, dict) and parts.scheme == "https" and not (parts.username or parts.password):
        digest = archive.get("hash")
        hashes = archive.get("hashes")
        if isinstance(hashes, dict) and isinstance(hashes.get("sha256"), str):
            digest = f"sha256={hashes['sha256']}"
        requirement = f"gpustack @ {url}" + (f"#{digest}" if isinstance(digest, str) and _HASH.fullmatch(digest)
                                             and "#" not in url else "")
    else:
        return ""
    return requirement if REQUIREMENT.fullmatch(requirement) else ""
