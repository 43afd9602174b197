"""The in-cluster programs' clients: the ServiceAccount token goes only to the API server they were
given (no redirect followed, https to http or to another host included), and Prometheus answers are
read from the one URL the job was rendered with."""

from __future__ import annotations

import http.server
import json
import ssl
import subprocess
import threading
from pathlib import Path

import pytest

from gpustack.incluster import autostop, idle

TOKEN = "service-account-token-for-the-test"


class Recorder(http.server.BaseHTTPRequestHandler):
    """Answers every request with `reply` (status, headers, body) and records what it was sent."""

    reply: tuple[int, dict[str, str], bytes] = (200, {}, b"{}")

    def do_GET(self) -> None:
        self.server.seen.append((self.path, self.headers.get("Authorization")))  # type: ignore[attr-defined]
        status, headers, body = self.server.reply  # type: ignore[attr-defined]
        self.send_response(status)
        for key, value in headers.items():
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


def serve(reply, tls: ssl.SSLContext | None = None):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
    server.seen, server.reply = [], reply  # type: ignore[attr-defined]
    if tls:
        server.socket = tls.wrap_socket(server.socket, server_side=True)
    # shutdown() waits for the serve loop to poll its flag: the default 0.5 s poll costs half a second each.
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True).start()
    return server


@pytest.fixture(scope="module")
def account_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A ServiceAccount folder (token, CA, the API server's key), made once: the tests only read it, and an
    RSA key costs openssl a few tenths of a second."""
    folder = tmp_path_factory.mktemp("account")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=api",
                    "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(folder / "key.pem"),
                    "-out", str(folder / "ca.crt")], check=True, capture_output=True)
    (folder / "token").write_text(TOKEN)
    return folder


@pytest.fixture
def account(account_folder: Path, monkeypatch):
    """The ServiceAccount folder in use and the TLS context of an API server its CA signed."""
    monkeypatch.setattr(autostop, "ACCOUNT", str(account_folder))
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(account_folder / "ca.crt", account_folder / "key.pem")
    return tls


@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
def test_the_token_does_not_follow_a_redirect_to_http_or_another_host(account, monkeypatch, status):
    elsewhere = serve((200, {}, b'{"items": []}'))
    api = serve((status, {"Location": f"http://127.0.0.1:{elsewhere.server_address[1]}/steal"}, b""), account)
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "127.0.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", str(api.server_address[1]))
    with pytest.raises(autostop.Refused, match="redirect"):
        autostop.call("GET", "/apis/apps/v1/namespaces/research/deployments")
    assert api.seen[0][1] == f"Bearer {TOKEN}"  # it reached the API server
    assert elsewhere.seen == []  # and nothing else
    api.shutdown()
    elsewhere.shutdown()


@pytest.mark.parametrize("host", ["evil.example/../x", "127.0.0.1/@evil", "a b", ""])
def test_the_api_server_address_is_a_host_and_port(account, monkeypatch, host):
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", host)
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "443")
    with pytest.raises(autostop.Refused, match="not a host and port"):
        autostop.call("GET", "/api/v1/namespaces/research/configmaps/x")


def test_the_idle_job_does_not_follow_prometheus_to_another_host(capsys):
    elsewhere = serve((200, {}, json.dumps({"status": "success", "data": {"resultType": "vector", "result": [
        {"metric": {}, "value": [1, "1"]}]}}).encode()))
    prometheus = serve((302, {"Location": f"http://127.0.0.1:{elsewhere.server_address[1]}/api/v1/query"}, b""))
    url = f"http://localhost:{prometheus.server_address[1]}"
    assert idle.main(["research", "statefulsets", "notebooks", url, "QUERY"]) == 1
    assert "redirect" in capsys.readouterr().err
    assert elsewhere.seen == [] and len(prometheus.seen) == 1
    prometheus.shutdown()
    elsewhere.shutdown()


def test_a_huge_prometheus_answer_is_not_read_whole(capsys):
    prometheus = serve((200, {}, b" " * (autostop.MAX_ANSWER_BYTES + 10) + b"{}"))
    url = f"http://localhost:{prometheus.server_address[1]}"
    assert idle.main(["research", "statefulsets", "notebooks", url, "QUERY"]) == 1
    assert "over" in capsys.readouterr().err
    prometheus.shutdown()
