"""HTTP that goes only where it is sent: every client of gpustack refuses redirects.

A redirect would carry the request's headers (a bearer token, a signed price-API request) to
wherever a server, a proxy or a hostile page points, and would read an answer from a host nobody
named. urllib follows redirects by default (`urllib.request.HTTPRedirectHandler`); these openers
refuse them with the caller's error, which says where the server pointed.
"""

from __future__ import annotations

import urllib.request
from collections.abc import Callable
from typing import Any


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def __init__(self, error: Callable[[str], Exception]):
        self.error = error

    def redirect_request(self, req: Any, fp: Any, code: int, msg: str, headers: Any, newurl: str) -> None:
        raise self.error(f"{req.full_url}: the server redirects (HTTP {code}) to {newurl[:200]}; redirects are "
                         "refused, so headers and tokens go only where asked: give the final URL")


def no_redirects(error: Callable[[str], Exception]) -> urllib.request.OpenerDirector:
    """An opener that raises `error(message)` instead of following a redirect."""
    return urllib.request.build_opener(_NoRedirect(error))
