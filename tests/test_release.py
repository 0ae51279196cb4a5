"""Releases a course can pin: one version everywhere, set-up cells that install its tag, the release
command (run on a scratch copy of the book), the repository address kept in one place, the footer."""

import importlib.metadata
import os
import re
import shutil
import subprocess
import sys
import types

import nbformat
import pytest

import seqbook
from seqbook.authoring import ROOT, chapter_files, changelog
from seqbook.authoring.citation import citation_with
from seqbook.authoring.release import parse_version, version_strings
from seqbook.authoring.setup_cell import (first_code_cell, installed_release, move_repository, repository_url,
                                          setup_source)
from seqbook.authoring.site_footer import render

VERSION = seqbook.__version__


# --- one version ---------------------------------------------------------------------------------

def test_the_version_strings_agree():
    assert parse_version(VERSION)
    assert importlib.metadata.version("seqbook") == VERSION, (
        "the installed package's metadata is stale: run `make setup` (or pip install -e .)")
    disagree = {place: v for place, v in version_strings().items() if v != VERSION}
    assert not disagree, f"these name another version than seqbook.__version__ = {VERSION}: {disagree}"


def test_every_setup_cell_installs_the_current_release_from_the_configured_repository():
    for path in chapter_files():
        cell = first_code_cell(nbformat.read(path, as_version=4))
        assert installed_release(cell.source) == (repository_url(), VERSION), path.name
        assert f"@v{VERSION}'" in cell.source


def test_in_colab_the_setup_cell_installs_the_tag_and_leaves_torch_alone(monkeypatch):
    """Run the cell as Colab would (google.colab imported), with pip replaced by a recorder."""
    calls = []
    monkeypatch.setitem(sys.modules, "google.colab", types.ModuleType("google.colab"))
    monkeypatch.setattr(subprocess, "run", lambda cmd, **kw: calls.append((cmd, kw)))
    exec(setup_source("https://example.org/me/book", "9.8.7"), {})
    assert calls == [([sys.executable, "-m", "pip", "install", "--quiet", "git+https://example.org/me/book@v9.8.7"],
                      {"check": True})]
    # pip upgrades nothing that already satisfies the package: Colab's torch stays, unless the
    # package asked for a torch that Colab's is not (Colab has 2.11 now; future ones are newer)
    from packaging.requirements import Requirement
    from packaging.version import Version

    torch = next(Requirement(r) for r in _project()["dependencies"] if Requirement(r).name == "torch")
    assert all(torch.specifier.contains(Version(v)) for v in ("2.11.0", "3.0.0", "9.0.0")), torch


def _project() -> dict:
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def test_changelog_is_newest_first_with_an_unreleased_section():
    text = (ROOT / "CHANGELOG.md").read_text()
    changelog.unreleased(text)  # raises if the section is missing
    released = [parse_version(v) for v in changelog.released_versions(text)]
    assert released == sorted(released, reverse=True)
    assert [s["name"] for s in changelog.sections(text)][0] == changelog.UNRELEASED


def test_changelog_release_moves_the_unreleased_notes():
    text = "# Changelog\n\nIntro.\n\n## [Unreleased]\n\n- a fix\n\n## [0.1.0] - 2026-01-02\n\n- first\n"
    new = changelog.with_release(text, "0.2.0", "2026-03-04")
    assert new == ("# Changelog\n\nIntro.\n\n## [Unreleased]\n\n## [0.2.0] - 2026-03-04\n\n- a fix\n\n"
                   "## [0.1.0] - 2026-01-02\n\n- first\n")
    assert changelog.notes(new, "0.2.0") == "- a fix" and changelog.unreleased(new) == ""
    assert changelog.released_versions(new) == ["0.2.0", "0.1.0"]
    with pytest.raises(ValueError, match="empty"):
        changelog.with_release(new, "0.3.0", "2026-05-06")
    with pytest.raises(ValueError, match="already has a section"):
        changelog.with_release(text, "0.1.0", "2026-05-06")
    with pytest.raises(ValueError, match="no section for 0.9.0"):
        changelog.notes(new, "0.9.0")


def test_citation_fields_are_set_in_place_or_appended():
    text = "# comment\ncff-version: 1.2.0\nversion: \"0.1.0\"\ntitle: x\n"
    new = citation_with(text, version="0.2.0", date="2026-03-04")
    assert new == "# comment\ncff-version: 1.2.0\nversion: \"0.2.0\"\ndate-released: \"2026-03-04\"\ntitle: x\n"
    assert citation_with(new, date="2026-05-06").count("date-released") == 1
    assert citation_with("title: x\n", url="https://e.org/b") == 'title: x\nrepository-code: "https://e.org/b"\n'


@pytest.mark.parametrize("bad", ["0.2", "v0.2.0", "0.2.0-rc1", "", "1.2.3.4"])
def test_a_version_is_three_numbers(bad):
    with pytest.raises(ValueError, match="expected a version of three numbers like 1.2.3"):
        parse_version(bad)


# --- the release command on a scratch copy of the book ------------------------------------------

RELEASED_FILES = ["CHANGELOG.md", "CITATION.cff", "_config.yml", "_toc.yml", "book/lib/_version.py"]


# git as on a maintainer's machine, minus their configuration (a signing hook, another identity)
GIT_ENV = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1",
           "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}


def git(repo, *args):
    result = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, env=GIT_ENV)
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def release_cli(*args):
    return subprocess.run([sys.executable, "-m", "seqbook.authoring.release", *args], capture_output=True,
                          text=True, env=GIT_ENV)


@pytest.fixture
def scratch(tmp_path):
    """A git repository holding what a release reads and writes, copied from this book, with one
    change recorded under the changelog's [Unreleased]."""
    repo = tmp_path / "book"
    for name in RELEASED_FILES + [str(p.relative_to(ROOT)) for p in chapter_files()]:
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / name, repo / name)
    text = (repo / "CHANGELOG.md").read_text()
    section = next(s for s in changelog.sections(text) if s["name"] == changelog.UNRELEASED)
    (repo / "CHANGELOG.md").write_text(text[:section["start"]] + "## [Unreleased]\n\n- A NEW EXERCISE\n\n"
                                       + text[section["end"]:])
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "the book")
    return repo


def test_release_bumps_every_version_rewrites_only_the_setup_cells_commits_and_tags(scratch):
    before = {p.name: nbformat.read(p, as_version=4) for p in chapter_files(scratch)}
    result = release_cli("0.2.0", "--root", str(scratch), "--date", "2026-12-01")
    assert result.returncode == 0, result.stderr
    assert "tagged v0.2.0" in result.stdout
    assert set(version_strings(scratch).values()) == {"0.2.0"}
    changed = git(scratch, "diff", "--name-only", "HEAD~1", "HEAD").splitlines()
    assert sorted(changed) == sorted(["CHANGELOG.md", "CITATION.cff", "book/lib/_version.py"]
                                     + [f"book/{p.name}" for p in chapter_files()])
    for path in chapter_files(scratch):
        after, old = nbformat.read(path, as_version=4), before[path.name]
        setup = next(i for i, c in enumerate(after.cells) if c.cell_type == "code")
        assert installed_release(after.cells[setup].source) == (repository_url(), "0.2.0")
        assert [c for i, c in enumerate(after.cells) if i != setup] == [
            c for i, c in enumerate(old.cells) if i != setup], f"{path.name}: a cell other than the set-up cell changed"
    text = (scratch / "CHANGELOG.md").read_text()
    assert changelog.notes(text, "0.2.0") == "- A NEW EXERCISE" and changelog.unreleased(text) == ""
    assert "## [0.2.0] - 2026-12-01" in text
    assert 'date-released: "2026-12-01"' in (scratch / "CITATION.cff").read_text()
    assert git(scratch, "rev-list", "-n", "1", "v0.2.0") == git(scratch, "rev-parse", "HEAD")
    assert git(scratch, "log", "-1", "--format=%s") == "Release 0.2.0"
    assert git(scratch, "status", "--porcelain") == ""
    notes = release_cli("--notes", "0.2.0", "--root", str(scratch))
    assert notes.returncode == 0 and notes.stdout.strip() == "- A NEW EXERCISE"
    again = release_cli("0.2.0", "--root", str(scratch))
    assert again.returncode == 1 and "v0.2.0 exists already" in again.stderr


def test_a_dry_run_shows_the_changes_and_changes_nothing(scratch):
    head = git(scratch, "rev-parse", "HEAD")
    result = release_cli("0.2.0", "--root", str(scratch), "--dry-run")
    assert result.returncode == 0, result.stderr
    url = repository_url()
    assert f"""-    "    package = 'git+{url}@v{VERSION}'\\n",\n""" in result.stdout
    assert f"""+    "    package = 'git+{url}@v0.2.0'\\n",\n""" in result.stdout
    assert '+__version__ = "0.2.0"' in result.stdout and "+## [0.2.0] - " in result.stdout
    assert "would change 9 files" in result.stdout
    assert git(scratch, "status", "--porcelain") == "" and git(scratch, "rev-parse", "HEAD") == head
    assert git(scratch, "tag", "--list") == ""


@pytest.mark.parametrize("setup, args, message", [
    (None, ["0.2"], "expected a version of three numbers like 1.2.3, got '0.2'"),
    (None, ["0.0.9"], f"0.0.9 is older than the current version {VERSION}"),
    ("dirty", ["0.2.0"], "uncommitted changes"),
    ("empty changelog", ["0.2.0"], "the [Unreleased] section is empty"),
    ("tag", ["0.2.0"], "the tag v0.2.0 exists already"),
    (None, ["0.2.0", "--date", "1 Dec 2026"], "expected the release date as YYYY-MM-DD"),
    (None, ["--notes", "0.3.0"], f"the tag v0.3.0 names 0.3.0, but the book's version is {VERSION}"),
])
def test_a_release_that_cannot_be_made_says_why_and_changes_nothing(scratch, setup, args, message):
    if setup == "dirty":
        (scratch / "_toc.yml").write_text("edited\n")
    elif setup == "empty changelog":
        text = (scratch / "CHANGELOG.md").read_text().replace("- A NEW EXERCISE\n", "")
        (scratch / "CHANGELOG.md").write_text(text)
        git(scratch, "commit", "-q", "-am", "empty")
    elif setup == "tag":
        git(scratch, "tag", "v0.2.0")
    head, status = git(scratch, "rev-parse", "HEAD"), git(scratch, "status", "--porcelain")
    result = release_cli(*args, "--root", str(scratch))
    assert result.returncode == 1 and message in result.stderr, result.stderr
    assert git(scratch, "rev-parse", "HEAD") == head and git(scratch, "status", "--porcelain") == status


# --- the repository address ------------------------------------------------------------------------

def test_the_repository_address_is_written_only_where_it_is_derived_from_the_config():
    """_config.yml holds it; CITATION.cff and the set-up cells are written from it (and checked)."""
    url = repository_url()
    tracked = subprocess.run(["git", "-C", str(ROOT), "ls-files"], capture_output=True, text=True)
    files = tracked.stdout.split() if tracked.returncode == 0 else [
        str(p.relative_to(ROOT)) for p in ROOT.rglob("*") if p.is_file() and ".venv" not in p.parts]
    holders = set()
    for name in files:
        path = ROOT / name
        if path.suffix in {".gz", ".png"} or not path.is_file():
            continue
        text = path.read_text(errors="replace")
        if url not in text:
            continue
        if path.suffix == ".ipynb":
            nb = nbformat.read(path, as_version=4)
            setup = first_code_cell(nb)
            assert all(url not in c.source for c in nb.cells if c is not setup), f"{name}: the address outside the set-up cell"
        holders.add(path.suffix if path.suffix == ".ipynb" else name)
    assert holders <= {"_config.yml", "CITATION.cff", ".ipynb"}, holders
    from seqbook.authoring.citation import citation_fields

    assert citation_fields(ROOT / "CITATION.cff")["repository-code"] == url


def test_one_command_moves_the_book_to_a_fork(scratch):
    fork = "https://github.com/a-course/sequence-models-fall"
    result = subprocess.run([sys.executable, "-m", "seqbook.authoring.setup_cell", "--root", str(scratch),
                             "--url", fork + "/"], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert len(result.stdout.splitlines()) == 2 + len(chapter_files())  # config, citation, every chapter
    assert move_repository(fork, root=scratch) == []                     # nothing left to change
    config = (scratch / "_config.yml").read_text()
    assert f"url: {fork}\n" in config and "# The one place that holds" in config  # comments survive
    assert repository_url(scratch / "_config.yml") == fork
    assert f'repository-code: "{fork}"' in (scratch / "CITATION.cff").read_text()
    for path in chapter_files(scratch):
        cell = first_code_cell(nbformat.read(path, as_version=4))
        assert installed_release(cell.source) == (fork, VERSION)
    with pytest.raises(ValueError, match="expected the repository's web address"):
        move_repository("git@github.com:a/b.git", root=scratch)


# --- the footer ---------------------------------------------------------------------------------------

def test_the_footer_template_gets_the_version_and_the_address():
    assert render("v{version} at <a href='{repository_url}'>x</a>", version="1.2.3",
                  repository_url="https://e.org/b") == "v1.2.3 at <a href='https://e.org/b'>x</a>"
    with pytest.raises(ValueError, match=r"names \['verison'\]"):
        render("{verison}", version="1.2.3", repository_url="u", repository_branch="main")


def test_the_configured_footer_names_the_licences_the_version_and_the_repository():
    import yaml

    template = yaml.safe_load((ROOT / "_config.yml").read_text())["html"]["extra_footer"]
    footer = render(template, version=VERSION, repository_url=repository_url(), repository_branch="main")
    assert "CC BY 4.0" in footer and "MIT licence" in footer
    assert f">{VERSION}<" in footer and f'href="{repository_url()}"' in footer
    assert not re.search(r"\{\w+\}", footer)
