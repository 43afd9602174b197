"""`catalog refresh` against hostile price pages: deep nesting, huge integers, devices and FIFOs as
--input, next-page links to local files, other hosts or pages read before, and page tokens with control
characters. Each is a located exit 2 and writes nothing; never exit 70."""

from __future__ import annotations

import http.server
import json
import os
from pathlib import Path

import pytest
from report_answers import local_server

from gpustack.catalog.rows import COLUMNS
from gpustack.catalog.feeds import NetworkPages, RefreshError, Request
from gpustack.cli import main
from gpustack.clouds.azure import prices as azure
from gpustack.clouds.gcp import prices as gcp

ATTACKS = Path(__file__).parent / "fixtures" / "attacks"


def refresh(tmp_path: Path, input_path: Path | str) -> tuple[int, str, Path]:
    out = tmp_path / "catalog.csv"
    code = main(["catalog", "refresh", "--cloud", "azure", "--region", "eastus", "--input", str(input_path),
                 "--as-of", "2026-11-30", "--out", str(out)])
    return code, out


@pytest.mark.parametrize("folder, message", [("prices-deep", "nested too deeply"),
                                             ("prices-bigint", "not a page of a price API"),
                                             ("prices-file-link", "not followed")])
def test_a_hostile_recorded_page_is_a_located_error(tmp_path, capsys, folder, message):
    code, out = refresh(tmp_path, ATTACKS / folder)
    err = capsys.readouterr().err
    assert code == 2 and message in err and "prices-1.json" in err and not out.exists()


@pytest.mark.parametrize("kind", ["device", "fifo"])
def test_input_must_be_a_regular_file_or_a_folder(tmp_path, capsys, kind):
    path = Path("/dev/zero")
    if kind == "fifo":
        path = tmp_path / "pipe"
        os.mkfifo(path)
    code, out = refresh(tmp_path, path)
    assert code == 2 and "not a regular file" in capsys.readouterr().err and not out.exists()


class Opener:
    """Stands in for urllib: answers each request with the next page, records what was asked."""

    def __init__(self, pages):
        self.pages, self.asked = pages, []

    def __call__(self, request, timeout):
        self.asked.append(request.full_url)
        body = json.dumps(self.pages[min(len(self.asked), len(self.pages)) - 1]).encode()

        class Response:
            headers = {"Content-Type": "application/json"}

            def __enter__(self):
                return self

            def __exit__(self, *exc):
                return False

            def read(self, limit):
                return body
        return Response()


@pytest.mark.parametrize("link", ["file:///etc/passwd", "http://prices.azure.com/api/retail/prices?x=1",
                                  "https://attacker.example/api/retail/prices", "https://prices.azure.com@evil/x"])
def test_network_pagination_stays_on_the_endpoint(link):
    opener = Opener([{"Items": [], "NextPageLink": link}])
    with pytest.raises(RefreshError, match="not followed"):
        azure.refresh(NetworkPages(opener=opener), "eastus", {})
    assert len(opener.asked) == 1


def test_network_pagination_refuses_a_cycle():
    loop = "https://prices.azure.com/api/retail/prices?$skip=100"
    opener = Opener([{"Items": [], "NextPageLink": loop}])
    with pytest.raises(RefreshError, match="read before"):
        azure.refresh(NetworkPages(opener=opener), "eastus", {})
    assert len(opener.asked) == 2


def test_a_gcp_page_token_is_quoted():
    opener = Opener([{"skus": [], "nextPageToken": "a\x07b&x=1 c"}, {"skus": []}])
    gcp.refresh(NetworkPages(opener=opener), "us-central1", {})
    assert opener.asked[1].endswith("pageToken=a%07b%26x%3D1%20c")


@pytest.mark.parametrize("mode", [0o644, 0o640])
def test_a_refreshed_catalog_keeps_the_mode_of_the_file_it_replaces(tmp_path, capsys, mode):
    out = tmp_path / "catalog.csv"
    old = ",".join(COLUMNS) + "\n"  # a catalog without rows
    out.write_text(old)
    out.chmod(mode)
    assert main(["catalog", "refresh", "--cloud", "azure", "--region", "eastus", "--input",
                 str(Path(__file__).parent / "fixtures" / "prices"), "--as-of", "2026-11-30", "--out", str(out)]) == 0
    assert out.stat().st_mode & 0o777 == mode and out.read_text() != old


class _Redirecting(http.server.BaseHTTPRequestHandler):
    asked: list[str] = []

    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        self.asked.append(self.path)
        self.send_response(302 if self.path == "/prices" else 200)
        self.send_header("Location", f"http://127.0.0.1:{self.server.server_address[1]}/elsewhere")
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"{}")


def test_a_price_page_that_redirects_is_refused_and_the_target_never_asked():
    # A redirect would carry a signed request's headers to wherever the page points.
    _Redirecting.asked = []
    refused = r"/prices: the server redirects \(HTTP 302\) to .*/elsewhere; redirects are refused"
    with local_server(_Redirecting) as url, pytest.raises(RefreshError, match=refused):
        NetworkPages().fetch(Request(f"{url}/prices", headers=(("Authorization", "signed"),)))
    assert _Redirecting.asked == ["/prices"]
