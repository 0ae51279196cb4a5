"""The GitHub Actions workflows, checked here since nothing here can run GitHub: actionlint (with
shellcheck over every `run:` script) must pass them, and what each runs must stay in step with
what the book supports (pyproject.toml, requirements.txt) and with the issue templates."""

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from seqbook.authoring import ROOT

BIN = Path(sys.executable).parent
WORKFLOWS = ROOT / ".github" / "workflows"
ACTION = ROOT / ".github" / "actions" / "setup-book" / "action.yml"


def tool(name: str) -> str:
    path = BIN / name if (BIN / name).exists() else shutil.which(name)
    assert path, f"{name} is not installed: it comes with requirements.txt (make setup)"
    return str(path)


def actionlint(repo: Path) -> subprocess.CompletedProcess:
    return subprocess.run([tool("actionlint"), "-no-color", "-shellcheck", tool("shellcheck")],
                          cwd=repo, capture_output=True, text=True)


def workflow(name: str) -> dict:
    # YAML 1.1 reads the key `on` as True
    loaded = yaml.safe_load((WORKFLOWS / name).read_text())
    loaded["on"] = loaded.pop(True, loaded.get("on"))
    return loaded


def steps(flow: dict) -> list[dict]:
    return [step for job in flow["jobs"].values() for step in job.get("steps", [])]


def run_text(flow: dict) -> str:
    return "\n".join(step.get("run", "") for step in steps(flow))


def test_actionlint_passes_every_workflow():
    assert sorted(p.name for p in WORKFLOWS.glob("*.yml")) == ["publish.yml", "seeds.yml", "test.yml"]
    result = actionlint(ROOT)
    assert result.returncode == 0, f"actionlint found problems:\n{result.stdout}{result.stderr}"


BROKEN = [
    ("runs-on: ubuntu-latest", "runs-on: ubuntu-latest\n    timeout-minutes: soon", "timeout-minutes"),  # a type
    ("${{ matrix.python }}", "${{ matrix.pyhton }}", "pyhton"),                                      # a typo
    ("run: make test", "run: echo $PYTEST_ADDOPTS*", "shellcheck reported issue"),                   # a script
    ("numpy: ${{ matrix.numpy }}", "numpi: ${{ matrix.numpy }}", 'input "numpi" is not defined'),  # our action
]


@pytest.mark.parametrize("old, new, message", BROKEN, ids=["type", "expression", "shell", "action-input"])
def test_actionlint_fails_a_broken_workflow(tmp_path, old, new, message):
    shutil.copytree(ROOT / ".github", tmp_path / ".github")
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    text = (WORKFLOWS / "test.yml").read_text()
    assert old in text
    (tmp_path / ".github" / "workflows" / "test.yml").write_text(text.replace(old, new, 1))
    result = actionlint(tmp_path)
    assert result.returncode == 1 and message in result.stdout, result.stdout + result.stderr


def test_the_shared_setup_action_scripts_pass_shellcheck(tmp_path):
    """actionlint checks the workflows' scripts, not those of a composite action: shellcheck them."""
    action = yaml.safe_load(ACTION.read_text())
    scripts = [step["run"] for step in action["runs"]["steps"] if "run" in step]
    assert scripts
    for i, script in enumerate(scripts):
        path = tmp_path / f"step{i}.sh"
        path.write_text("#!/usr/bin/env bash\n" + re.sub(r"\$\{\{[^}]*\}\}", "x", script))
        result = subprocess.run([tool("shellcheck"), str(path)], capture_output=True, text=True)
        assert result.returncode == 0, result.stdout


def supported_pythons() -> list[str]:
    text = (ROOT / "pyproject.toml").read_text()
    return re.findall(r'"Programming Language :: Python :: (3\.\d+)"', text)


def test_the_test_matrix_spans_the_oldest_and_newest_python_and_torch():
    pythons = supported_pythons()
    assert pythons[0] == "3.10" and pythons[-1] == "3.13"
    assert re.search(rf'requires-python = ">={re.escape(pythons[0])}"', (ROOT / "pyproject.toml").read_text())
    torch_line = next(l for l in (ROOT / "requirements.txt").read_text().splitlines() if l.startswith("torch"))
    low, major, minor = re.fullmatch(r"torch>=(\d+\.\d+),<(\d+)\.(\d+)", torch_line.split("#")[0].strip()).groups()
    newest = f"{major}.{int(minor) - 1}"
    flow = workflow("test.yml")
    matrix = flow["jobs"]["test"]["strategy"]["matrix"]["include"]
    assert [(m["python"], m["torch"]) for m in matrix] == [(pythons[0], low), (pythons[-1], newest)]
    assert all(m["numpy"] == "<2" for m in matrix if m["torch"] in ("2.0", "2.1", "2.2", "2.3"))
    assert "make test" in run_text(flow)
    assert set(flow["on"]) >= {"push", "pull_request"}


def test_every_workflow_installs_torch_from_the_cpu_index_with_a_pip_cache():
    action = ACTION.read_text()
    assert "--index-url https://download.pytorch.org/whl/cpu" in action
    assert "cache: pip" in action and "PIP_CONSTRAINT" in action
    for name in ("test.yml", "publish.yml", "seeds.yml"):
        uses = [step.get("uses", "") for step in steps(workflow(name))]
        assert "./.github/actions/setup-book" in uses, name


def test_a_failed_test_run_keeps_the_site_build_reports():
    flow = workflow("test.yml")
    upload = next(s for s in steps(flow) if s.get("uses", "").startswith("actions/upload-artifact"))
    assert upload["if"] == "failure()" and "_build/html/reports" in upload["with"]["path"]
    basetemp = re.search(r"--basetemp=(.+)", flow["jobs"]["test"]["env"]["PYTEST_ADDOPTS"]).group(1)
    assert basetemp.endswith("/.pytest-tmp") and ".pytest-tmp/" in upload["with"]["path"]


def test_publish_deploys_the_website_and_the_student_site_and_pushes_the_student_branch():
    flow = workflow("publish.yml")
    assert flow["on"]["push"]["branches"] == ["main"] and flow["on"]["push"]["tags"]
    script = run_text(flow)
    for command in ("make book", "make student", "git push origin student",
                    "cp -r _build/student/site/_build/html/. _site/student/", "gh release create",
                    # the Chinese edition, built from the same cache, under /zh/ and /student/zh/
                    "make book-zh", "make student-zh", "published",
                    "cp -r _build/zh/_build/html/. _site/zh/",
                    "cp -r _build/zh/student/site/_build/html/. _site/student/zh/"):
        assert command in script, command
    uses = [step.get("uses", "") for step in steps(flow)]
    assert any(u.startswith("actions/upload-pages-artifact") for u in uses)
    assert any(u.startswith("actions/deploy-pages") for u in uses)
    assert flow["jobs"]["deploy"]["permissions"] == {"pages": "write", "id-token": "write"}


def test_the_seed_sweep_runs_weekly_and_opens_nothing():
    flow = workflow("seeds.yml")
    cron = flow["on"]["schedule"][0]["cron"].split()
    assert len(cron) == 5 and cron[2] == cron[3] == "*" and cron[4] != "*"  # one day a week
    assert "make seeds" in run_text(flow)
    assert flow["permissions"] == {"contents": "read"}  # it cannot open issues or push anything


def test_a_bug_report_asks_for_the_environment_report():
    form = yaml.safe_load((ROOT / ".github" / "ISSUE_TEMPLATE" / "bug_report.yml").read_text())
    env = [f for f in form["body"] if "python -m seqbook.env" in f.get("attributes", {}).get("label", "")]
    assert env and env[0]["validations"]["required"] is True
    assert "python -m seqbook.env" in (ROOT / "README.md").read_text()
