"""The conda environments (envs/*.yaml) install what the pyproject extras name, nothing else.

Each env file gets its Python packages from one pip line, `-e ..[extra,...]` (the checkout,
with extras), so that `--software-deployment-method conda` and a venv install the same
versions; its conda part holds only Python and non-Python tools (compilers, CMake). Generic
over envs/*.yaml: a new env file is checked as soon as it exists.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from support import ROOT

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

ENVS = sorted((ROOT / "envs").glob("*.yaml"))
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
EXTRAS = PYPROJECT["project"]["optional-dependencies"]
PIP_LINE = re.compile(r"-e \.\.\[([\w,-]+)\]")
# What a conda env may list besides the pip line: Python itself and build tools.
CONDA_TOOLS = {"python", "pip", "c-compiler", "cxx-compiler", "compilers", "cmake", "make", "patch"}


def _extras_packages(extras: list[str]) -> set[str]:
    """The distributions the extras name (the `all` style self-references expanded)."""
    names = set()
    for extra in extras:
        for requirement in map(Requirement, EXTRAS[extra]):
            if canonicalize_name(requirement.name) == "xlsent":
                names |= _extras_packages(sorted(requirement.extras))
            else:
                names.add(canonicalize_name(requirement.name))
    return names


def _env(path: Path) -> tuple[list[str], list[str], list[str]]:
    """(conda dependencies, pip lines, extras named by the pip line) of an env file."""
    spec = yaml.safe_load(path.read_text())
    conda, pip = [], []
    for dep in spec["dependencies"]:
        if isinstance(dep, dict):
            pip += dep["pip"]
        else:
            conda.append(dep)
    editable = [m for line in pip if (m := PIP_LINE.fullmatch(line.strip()))]
    assert len(editable) == 1, f"{path.name}: want one `-e ..[extras]` pip line, got {pip}"
    return conda, pip, editable[0].group(1).split(",")


def test_there_are_env_files():
    assert {"corpus.yaml", "gpu.yaml", "eval.yaml"} <= {p.name for p in ENVS}


@pytest.mark.parametrize("path", ENVS, ids=[p.stem for p in ENVS])
def test_env_installs_the_checkout_with_existing_extras(path):
    _, pip, extras = _env(path)
    assert (path.parent / "..").resolve() == ROOT  # `..` is the checkout, from envs/
    unknown = set(extras) - set(EXTRAS)
    assert not unknown, f"{path.name} names extras that pyproject.toml lacks: {unknown}"
    assert len(pip) == 1, f"{path.name}: Python packages belong in a pyproject extra: {pip}"
    # `make setup` (pip install -e ".[all,test]") installs what every env installs.
    in_all = {
        extra
        for requirement in map(Requirement, EXTRAS["all"])
        if canonicalize_name(requirement.name) == "xlsent"
        for extra in requirement.extras
    }
    assert set(extras) <= in_all, f"{path.name}: extras {set(extras) - in_all} are not in `all`"


@pytest.mark.parametrize("path", ENVS, ids=[p.stem for p in ENVS])
def test_env_header_names_the_same_extras(path):
    """The comment at the top says which extras the env mirrors: it must say the truth."""
    _, _, extras = _env(path)
    header = "".join(
        line for line in path.read_text().splitlines(keepends=True) if line.startswith("#")
    )
    named = re.findall(r"xlsent\[([\w,-]+)\]", header)
    assert named == [",".join(extras)], f"{path.name}: header says {named}, pip line {extras}"


@pytest.mark.parametrize("path", ENVS, ids=[p.stem for p in ENVS])
def test_env_conda_part_has_no_python_packages_of_its_own(path):
    conda, _, extras = _env(path)
    packages = _extras_packages(extras)
    for dep in conda:
        name = canonicalize_name(re.split(r"[=<>! ]", dep.strip(), maxsplit=1)[0])
        assert name not in packages, f"{path.name}: {name} comes from both conda and pip"
        assert name in CONDA_TOOLS, (
            f"{path.name}: conda package {name!r} is not in any pyproject extra; add it to an "
            f"extra (if it is a Python package) or to CONDA_TOOLS here (if it is a tool)"
        )
        if name == "python":
            version = re.search(r"[\d.]+", dep).group(0)
            assert SpecifierSet(PYPROJECT["project"]["requires-python"]).contains(version + ".0")


def test_every_env_a_rule_names_exists():
    named = set()
    for rules in (ROOT / "workflow" / "rules").glob("*.smk"):
        named |= set(re.findall(r"\"\.\./\.\./envs/([\w-]+\.yaml)\"", rules.read_text()))
    assert named
    assert named <= {p.name for p in ENVS}
