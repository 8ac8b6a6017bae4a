"""The documentation site builds with ``--strict``, is self-contained and offline, names no issue numbers, and its
home page, scenario reference and a tutorial render in headless Chromium without console errors; the README stays
short and keeps its two commands."""

from __future__ import annotations

import fcntl
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.outputs.test_webmap import _browse, _console_lines

TWO_COMMANDS = (
    "python3 -m venv .venv && .venv/bin/pip install -q -e . && .venv/bin/python cli.py solve",
    'python3 -m venv .venv && .venv/bin/pip install -q -e ".[dev]" && .venv/bin/python -m pytest -q',
)


def _build(out: Path, *, execute: bool = False) -> None:
    """``mkdocs build --strict`` into ``out/html`` (about 5 s); run from ``out``, so its caches land there too.

    ``execute`` runs the notebooks as the site is built (``PLACEMENT_DOCS_EXECUTE``), their outputs on the pages.
    """
    command = [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(REPO / "mkdocs.yml"), "-d", str(out / "html")]
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "PLACEMENT_DOCS_EXECUTE": "true" if execute else "false"}
    env |= {"MPLBACKEND": "Agg", "JUPYTER_PLATFORM_DIRS": "1"}
    done = subprocess.run(command, cwd=out, capture_output=True, text=True, timeout=900, check=False, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    warnings = [line for line in done.stderr.splitlines() if re.match(r"WARNING\s+-", line)]  # mkdocs's own
    assert warnings == [], done.stderr[-3000:]
    (out / "built").write_text("ok\n")


@pytest.fixture(scope="session")
def site(tmp_path_factory: pytest.TempPathFactory, worker_id: str) -> Path:
    """The site, built once per test run: pytest-xdist's workers share one build (the first to take the lock builds)."""
    base = tmp_path_factory.getbasetemp()
    out = (base.parent if worker_id != "master" else base) / "docs-site"
    out.mkdir(exist_ok=True)
    with (out / "lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (out / "built").exists():
            _build(out)
    return out / "html"


def _pages(site: Path) -> list[Path]:
    return sorted(site.rglob("*.html"))


def test_site_has_every_section_and_the_generated_reference(site: Path) -> None:
    for page in ("index", "get-started/install", "guides/own-sites", "reference/scenario", "reference/cli",
                 "reference/outputs", "reference/api", "models/serving", "validation/index", "tutorials/01_quickstart"):  # fmt: skip
        assert (site / f"{page}.html").is_file(), page
    scenario = (site / "reference" / "scenario.html").read_text(encoding="utf-8")
    assert "classes[].ttft_p99_ms" in scenario and "horizon.accelerators[].id" in scenario
    assert "--time-limit" in (site / "reference" / "cli.html").read_text(encoding="utf-8")
    assert "cost_per_million_goodput_tokens_usd" in (site / "reference" / "outputs.html").read_text(encoding="utf-8")
    api = (site / "reference" / "api.html").read_text(encoding="utf-8")
    assert 'id="placement.plan.solve.run"' in api  # mkdocstrings rendered the docstrings


def test_site_fetches_nothing_from_the_web(site: Path) -> None:
    remote = re.compile(
        r"<script[^>]+src=[\"']?(https?:)?//|<link[^>]+href=[\"']?(https?:)?//[^>]*>|import\(\s*[\"']https?:|"
        r"@import\s+url\(\s*[\"']?https?:|fonts\.googleapis|fonts\.gstatic"
    )
    offenders = {}
    for page in _pages(site):
        found = [m.group(0)[:120] for m in remote.finditer(page.read_text(encoding="utf-8"))]
        found = [f for f in found if "stylesheet" in f or "<link" not in f]  # plain links (<a>) are fine
        if found:
            offenders[str(page.relative_to(site))] = found
    assert offenders == {}
    for sheet in site.rglob("*.css"):
        assert not re.search(r"url\(\s*[\"']?https?:", sheet.read_text(encoding="utf-8")), sheet.name


def test_no_user_facing_page_names_an_issue_number(site: Path) -> None:
    pattern = re.compile(r"\bissues?\s+#?\d+|\(#\d+\)", re.IGNORECASE)
    texts = {str(p.relative_to(REPO)): p.read_text(encoding="utf-8") for p in (REPO / "docs").rglob("*.md")}
    texts["README.md"] = (REPO / "README.md").read_text(encoding="utf-8")
    texts |= {str(p.relative_to(site)): p.read_text(encoding="utf-8") for p in _pages(site)}
    assert {name: pattern.findall(text) for name, text in texts.items() if pattern.search(text)} == {}


def test_readme_is_short_and_keeps_the_two_commands() -> None:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 200
    for command in TWO_COMMANDS:
        assert command in text


@pytest.mark.slow
@pytest.mark.parametrize("page", ["index", "reference/scenario", "tutorials/01_quickstart"])
def test_page_renders_offline_without_console_errors(site: Path, tmp_path: Path, page: str) -> None:
    done = _browse(site / f"{page}.html", tmp_path / "profile", "--dump-dom")
    assert done.returncode == 0, done.stderr[-2000:]
    assert _console_lines(done.stderr) == []
    assert 'class="md-content"' in done.stdout  # the theme laid the page out
    assert len(re.sub(r"<[^>]+>", "", done.stdout)) > 2000  # and it has text


@pytest.mark.slow
def test_the_tutorials_run_as_the_site_is_built_and_show_their_outputs(tmp_path: Path) -> None:
    # every notebook run from its first cell to its last (a failing cell fails the build), its figures on its page
    _build(tmp_path, execute=True)
    for page in sorted((tmp_path / "html" / "tutorials").glob("0*.html")):
        html = page.read_text(encoding="utf-8")
        assert html.count("data:image/png") >= 1, f"{page.name}: no figure drawn"
        assert re.search(r'<div[^>]*class="[^"]*jp-OutputArea-output', html), f"{page.name}: no output shown"
    done = _browse(tmp_path / "html" / "tutorials" / "01_quickstart.html", tmp_path / "profile", "--dump-dom")
    assert done.returncode == 0 and _console_lines(done.stderr) == []
