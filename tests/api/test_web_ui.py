"""The web UI is served at / and /assets/ beside the API, without taking over the API's JSON 404s."""

from __future__ import annotations

import httpx
import pytest

from backend.api.settings import ApiSettings
from tests.api.server import serve
from tests.api.support import assert_error


@pytest.fixture(scope="module")
def client(build_app_services, tmp_path_factory):
    """The repository's own frontend/, found by the default setting."""
    services = build_app_services(tmp_path_factory.mktemp("web-ui"))
    with serve(services) as running, httpx.Client(base_url=running.url, timeout=60) as client:
        yield client


def test_the_root_is_the_web_ui_and_is_revalidated(client):
    response = client.get("/")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/html")
    assert response.headers["cache-control"] == "no-cache"
    assert "<html" in response.text.lower()


def test_the_web_ui_runs_only_its_own_scripts(client):
    """Defence in depth behind the answer renderer (frontend/assets/js/markdown.js): no inline script or event
    handler runs and nothing loads from another origin, even if markup reached the page."""
    policy = dict(
        directive.strip().split(" ", 1) for directive in client.get("/").headers["content-security-policy"].split(";")
    )
    assert policy["default-src"] == "'self'"  # covers script-src, img-src, connect-src: no 'unsafe-inline'
    assert policy["object-src"] == "'none'"


@pytest.mark.parametrize(
    ("path", "content_types"),
    [("/assets/app.js", ("text/javascript", "application/javascript")), ("/assets/app.css", ("text/css",)),
     # A module script must be served as JavaScript or the browser refuses it; .mjs is not in every mime table.
     ("/assets/vendor/dompurify/purify.es.mjs", ("text/javascript", "application/javascript"))],
)
def test_the_assets_are_served_with_their_content_types(client, path, content_types):
    response = client.get(path)
    assert response.status_code == 200
    assert response.headers["content-type"].split(";")[0] in content_types
    assert response.headers["cache-control"] == "no-cache"


@pytest.mark.parametrize("path", ["/nope", "/assets/missing.js", "/index.html"])
def test_other_paths_are_still_the_json_404_of_the_error_contract(client, path):
    assert_error(client.get(path), 404, "NOT_FOUND")


def test_the_web_ui_is_not_part_of_the_api_schema(client):
    assert "/" not in client.get("/openapi.json").json()["paths"]


def test_without_a_frontend_the_api_still_runs(build_app_services, tmp_path):
    settings = ApiSettings(frontend_dir=tmp_path / "no-frontend")
    with serve(build_app_services(tmp_path / "data"), settings) as running, httpx.Client(base_url=running.url) as client:
        assert_error(client.get("/"), 404, "NOT_FOUND")
        assert client.get("/health").status_code == 200


@pytest.mark.parametrize("path", ["/", "/assets/app.js"])
def test_a_browser_revalidating_a_file_gets_a_304(client, path):
    first = client.get(path)
    for condition in ({"if-none-match": first.headers["etag"]}, {"if-modified-since": first.headers["last-modified"]}):
        again = client.get(path, headers=condition)
        assert again.status_code == 304 and not again.content
        assert again.headers["cache-control"] == "no-cache"


@pytest.mark.parametrize("path", ["/", "/assets/app.js"])
def test_a_range_is_served_and_one_that_cannot_be_is_a_json_error(client, path):
    whole = client.get(path).content
    part = client.get(path, headers={"range": "bytes=0-9"})
    assert part.status_code == 206 and part.content == whole[:10]

    past_the_end = client.get(path, headers={"range": f"bytes={len(whole)}-"})
    assert_error(past_the_end, 416, "RANGE_NOT_SATISFIABLE", size_bytes=len(whole))
    assert past_the_end.headers["content-range"] == f"bytes */{len(whole)}"
    for malformed in ("bytes=9-2", "pages=1-2", "garbage"):
        assert_error(client.get(path, headers={"range": malformed}), 400, "VALIDATION_ERROR", field="range")
