"""The README's and the quickstart's code run in a fresh virtual environment with the
package installed exactly as each page says (its ``pip install`` line, the package's name
pointing at this checkout), from a directory outside it: what a new user meets first."""

from __future__ import annotations

import re
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RUNNER = ROOT / "tests" / "page_runner.py"


def install_line(page: Path) -> str:
    """The page's install line for the testing extra: ``pip install 'shardmodel[testing]'``."""
    for line in page.read_text(encoding="utf-8").splitlines():
        found = re.search(r"\$ pip install '?shardmodel\[testing\]'?", line)
        if found:
            return found.group(0)
    raise AssertionError(f"{page.name} has no pip install line for shardmodel[testing]")


def run_in(home: Path, *command: str) -> str:
    done = subprocess.run(
        command, cwd=home, capture_output=True, text=True, timeout=900, check=False
    )
    assert done.returncode == 0, f"{' '.join(command)}\n{done.stdout}\n{done.stderr}"
    return done.stdout


def test_the_readme_and_quickstart_run_with_what_each_page_installs(tmp_path: Path) -> None:
    """One fresh venv (pip and nothing else) per distinct install line; the pages' lines
    agree today, so one install serves both (about 45 s from pip's cache)."""
    venvs: dict[str, Path] = {}
    for page in ("README.md", "docs/quickstart.rst"):
        line = install_line(ROOT / page)
        if line not in venvs:
            home = tmp_path / f"venv{len(venvs)}"
            venv.create(home, with_pip=True)
            requirement = line.split("pip install ", 1)[1].strip("'")
            pip = [str(home / "bin" / "python"), "-m", "pip", "install", "--quiet"]
            pip += ["--disable-pip-version-check", "--no-compile"]
            run_in(tmp_path, *pip, requirement.replace("shardmodel", str(ROOT), 1))
            venvs[line] = home
        python = str(venvs[line] / "bin" / "python")
        where = run_in(tmp_path, python, "-c", "import shardmodel; print(shardmodel.__file__)")
        assert where.startswith(str(tmp_path)), where  # the installed package, not the checkout
        output = run_in(tmp_path, python, str(RUNNER), str(ROOT / page))
        assert "blocks passed" in output, output
        if page == "README.md":
            assert "printed 'user-12345'" in output, output


def test_the_runner_fails_a_page_whose_output_differs(tmp_path: Path) -> None:
    """A testoutput that does not match, or a doctest that fails, fails the run."""
    page = tmp_path / "page.rst"
    page.write_text(
        ".. testcode::\n\n   print(1 + 1)\n\n.. testoutput::\n\n   3\n", encoding="utf-8"
    )
    done = subprocess.run([sys.executable, str(RUNNER), str(page)], capture_output=True, text=True)
    assert done.returncode == 1 and "expected" in done.stdout
    page.write_text(".. doctest::\n\n   >>> 1 + 1\n   3\n", encoding="utf-8")
    done = subprocess.run([sys.executable, str(RUNNER), str(page)], capture_output=True, text=True)
    assert done.returncode == 1 and "Failed example" in done.stdout
