"""Every loss module documents how it relates to the others and ends with a worked example:
the examples run here as doctests (`xlsent.losses`, and TR's cached twin
`xlsent.train.cached_tr`), so a printed value that the code no longer gives fails."""

import doctest
import importlib
import pkgutil
import re

import pytest

from xlsent import losses

MODULES = [f"xlsent.losses.{m.name}" for m in pkgutil.iter_modules(losses.__path__)]


@pytest.mark.parametrize("name", [*MODULES, "xlsent.train.cached_tr"])
def test_the_modules_examples_give_what_they_print(name):
    module = importlib.import_module(name)
    assert "\nRelations:\n" in module.__doc__ and "\nExample" in module.__doc__
    result = doctest.testmod(module)
    assert result.attempted > 0 and result.failed == 0


def test_the_package_lists_every_loss_module():
    listed = re.findall(r"^- `(\w+)`", losses.__doc__, flags=re.MULTILINE)
    assert sorted(listed) == sorted(name.rpartition(".")[2] for name in MODULES)
