"""The quickstart's install shows what it installs as it goes: the Makefile's install recipe runs pip through
eyt_dagster/ops/install_progress.py and never silences it, and that filter turns pip's output into one line per
package, keeps pip's exit status and shows pip's last lines when it fails."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from eyt_dagster.ops.install_progress import main, short_lines

ROOT = Path(__file__).resolve().parents[2]

# pip's stdout without a terminal, as a first install prints it (trimmed; the real one has ~150 packages)
PIP_FIRST = """\
Obtaining file:///home/me/eyt
  Installing build dependencies: started
  Installing build dependencies: finished with status 'done'
  Getting requirements to build editable: started
  Getting requirements to build editable: finished with status 'done'
Collecting torch==2.13.0
  Downloading https://download.pytorch.org/whl/cpu/torch-2.13.0%2Bcpu-cp311-cp311-manylinux_2_28_x86_64.whl (190.3 MB)
Collecting dagster>=1.9 (from eyt-dagster==0.1)
  Using cached dagster-1.13.27-py3-none-any.whl (1.9 MB)
Processing /opt/wheels/six-1.17.0-py2.py3-none-any.whl (from eyt-dagster==0.1)
Collecting some-sdist (from eyt-dagster==0.1)
Requirement already satisfied: pip in ./.venv/lib/python3.11/site-packages
Building wheels for collected packages: eyt-dagster
  Building editable for eyt-dagster (pyproject.toml): started
  Building editable for eyt-dagster (pyproject.toml): finished with status 'done'
  Created wheel for eyt-dagster: filename=eyt_dagster-0.1-0.editable-py3-none-any.whl size=9000 sha256=00
Successfully built eyt-dagster
Installing collected packages: torch, dagster, six, some-sdist, eyt-dagster
Successfully installed dagster-1.13.27 eyt-dagster-0.1 six-1.17.0 some-sdist-1.0 torch-2.13.0+cpu
"""


def _recipe(target: str) -> list[str]:
    """The recipe lines of a Makefile target, its variables expanded."""
    text = (ROOT / "Makefile").read_text()
    variables = dict(re.findall(r"^([A-Z]+) *[:?]?= *(.*)$", text, re.M))
    block = re.search(rf"^{re.escape(target)}:.*\n((?:\t.*\n)+)", text, re.M)
    assert block, f"no recipe for {target} in the Makefile"
    lines = [line.strip() for line in block[1].splitlines()]
    for _ in range(3):  # a variable may name another: INSTALL -> BIN -> VENV
        lines = [re.sub(r"\$\(([A-Z]+)\)", lambda m: variables.get(m[1], m[0]), line) for line in lines]
    return lines


@pytest.mark.unit
def test_the_install_recipe_shows_what_it_installs():
    recipe = _recipe("$(VENV)/.installed")
    installs = [line for line in recipe if "install" in line and "echo" not in line]
    assert len(installs) == 2, recipe  # torch first, then the project
    for line in installs:
        # nothing that silences pip or throws its output away
        assert not re.search(r"(^|\s)(-q+|--quiet|--silent|-s)(\s|$)|>\s*/dev/null|2>&1", line), line
        assert "eyt_dagster/ops/install_progress.py" in line, line  # pip's lines, one per package
    assert recipe[0].startswith("@echo ") and recipe[-1] == "touch $@"  # says what comes; marks it done
    # an install that is up to date runs no recipe: `make run` a second time goes straight to `eyt run`
    assert _recipe("run") == ["HF_HUB_OFFLINE=1 .venv/bin/eyt run"]


@pytest.mark.unit
def test_pips_output_becomes_one_line_per_package():
    assert list(short_lines(PIP_FIRST.splitlines())) == [
        "  /home/me/eyt: this checkout, installed editable",
        "  installing build dependencies ...",
        "  [1] torch 2.13.0+cpu (190.3 MB download)",
        "  [2] dagster 1.13.27 (1.9 MB cached)",
        "  [3] six 1.17.0",
        "  [4] some-sdist",
        "  building editable for eyt-dagster (pyproject.toml) ...",
        "  installing 5 package(s) into the virtualenv (unpacking them; torch alone takes a minute) ...",
        "  installed 5 package(s)",
    ]
    satisfied = ["Requirement already satisfied: torch==2.13.0 in ./.venv/lib/python3.11/site-packages"] * 3
    assert list(short_lines(satisfied)) == ["  nothing new to install (3 requirement(s) already satisfied)"]


@pytest.mark.cli
def test_the_filter_keeps_pips_exit_status_and_shows_its_last_lines_when_it_fails(capfd):
    fake_pip = (
        "import sys\n"
        "assert sys.argv[1:4] == ['install', '--progress-bar', 'off'], sys.argv\n"
        "print('Collecting torch==2.13.0')\n"
        "print('  Downloading torch-2.13.0-cp311-cp311-linux_x86_64.whl (190.3 MB)')\n"
        "print('ERROR: a disk full', file=sys.stderr)\n"
        "sys.exit(3)\n"
    )
    assert main(["torch==2.13.0"], pip=[sys.executable, "-c", fake_pip]) == 3
    out, err = capfd.readouterr()
    assert out == "  [1] torch 2.13.0 (190.3 MB download)\n"  # no 'nothing new to install' after a failure
    assert "ERROR: a disk full" in err and "pip install failed (exit 3)" in err and "Collecting torch" in err


@pytest.mark.cli
def test_a_warning_pip_repeats_for_every_package_is_shown_once_then_counted(capfd):
    missing = "WARNING: Location 'file:///opt/nowhere/simple/{}/' is ignored: it is neither a file nor a directory."
    fake_pip = (
        "import sys\n"
        f"for name in ('torch', 'sympy', 'jinja2'):\n"
        f"    print({missing!r}.format(name), file=sys.stderr)\n"
        "    print('Collecting ' + name)\n"
        "print('WARNING: something else', file=sys.stderr)\n"
        "print('Successfully installed torch-2 sympy-1 jinja2-3')\n"
    )
    assert main(["torch"], pip=[sys.executable, "-c", fake_pip]) == 0
    out, err = capfd.readouterr()
    assert out.splitlines()[-1] == "  installed 3 package(s)"
    lines = err.splitlines()
    assert lines[0].startswith(missing.format("torch")) and "further ones are counted" in lines[0]
    assert "WARNING: something else" in lines  # another warning passes untouched
    assert lines[-1] == "  (pip repeated that warning about a missing package location 2 more time(s))"
    assert sum("is ignored" in line for line in lines) == 1
