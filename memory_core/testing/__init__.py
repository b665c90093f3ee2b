"""The storage conformance suite, for any adapter: the tests every adapter this project
ships passes (about 130 of them), run against one you write.

The tests speak only the public ports — ``Storage``, ``storage.memory``
(``MemoryStore``), ``storage.runs`` (``RunJournal``), ``write_batch()``,
``session()``, ``erase_thread``/``erase_resource`` — and an ``AdapterFactory`` you
supply: a name, ``make(tmp_path, **kwargs) -> Storage`` (a new, empty storage whose
database lives under ``tmp_path``; it must accept ``clock=``), and the optional
behaviours the adapter promises (``PERSISTS``, ``ATOMIC_BATCHES``,
``SEPARATE_CONNECTIONS``; see ``memory_core.testing.factory``). The tests of a
behaviour not promised are skipped, or check the weaker promise.

Needs pytest and hypothesis when it runs (``pip install 'memory-workbench[testing]'``);
importing this module imports pytest, ``import memory_core`` does not.

Example — a test module of its own (the suite's fixtures and classes become its
names; ``conformance_tests`` takes several factories to run the suite on each)::

    # tests/test_my_storage.py
    from memory_core.testing import PERSISTS, AdapterFactory, conformance_tests
    from my_package import MyStorage

    globals().update(conformance_tests(AdapterFactory(
        "mine",
        make=lambda tmp_path, **kw: MyStorage(tmp_path / "my.db", **kw),
        capabilities={PERSISTS},
    )))

``pytest tests/test_my_storage.py`` then runs every test, one class per topic:
``TestJournal::test_put_if_absent_first_write_wins[mine]``, ``TestMessages::…``.
The module gets the fixtures ``adapter`` (the factory under test), ``storage``,
``clock``, ``clocked``, ``two`` and ``t1``; don't define those names in it yourself.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Iterator
from types import FunctionType, ModuleType
from typing import Any

import pytest

from memory_core.testing.factory import (
    ATOMIC_BATCHES,
    CAPABILITIES,
    PERSISTS,
    SEPARATE_CONNECTIONS,
    AdapterFactory,
    as_factories,
)

# the suite's modules are imported by conformance_tests, after this: pytest rewrites
# their asserts (a failure shows the values compared) as it does a test file's
pytest.register_assert_rewrite("memory_core.testing.conformance")

__all__ = ["ATOMIC_BATCHES", "CAPABILITIES", "PERSISTS", "SEPARATE_CONNECTIONS",
           "AdapterFactory", "conformance_tests"]


def conformance_tests(*factories: AdapterFactory) -> dict[str, Any]:
    """The conformance suite as a test module's names: put them in the module's
    globals (``globals().update(conformance_tests(factory, ...))``) and pytest collects
    every test once per factory, the factory's name as the test's parameter id.

    Returns the ``adapter`` fixture (parametrized over ``factories``), the fixtures
    the tests build on (``storage``, ``clock``, ``clocked``, ``two``, ``t1``), and one
    ``Test<Topic>`` class per module of ``memory_core.testing.conformance`` holding
    its tests."""
    from memory_core.testing.fixtures import FIXTURES

    chosen = as_factories(factories)

    @pytest.fixture(params=chosen, ids=[f.name for f in chosen])
    def adapter(request: pytest.FixtureRequest) -> AdapterFactory:
        factory: AdapterFactory = request.param
        return factory

    names: dict[str, Any] = {"adapter": adapter, **FIXTURES}
    for module in _suite_modules():
        topic = module.__name__.rsplit(".", 1)[1]
        cls = "Test" + "".join(w.capitalize() for w in topic.split("_"))
        names[cls] = type(cls, (), {
            "__doc__": module.__doc__,
            **{name: staticmethod(fn) for name, fn in _tests_of(module)}})
    return names


def _suite_modules() -> Iterator[ModuleType]:
    package = importlib.import_module("memory_core.testing.conformance")
    for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda i: i.name):
        yield importlib.import_module(f"{package.__name__}.{info.name}")


def _tests_of(module: ModuleType) -> Iterator[tuple[str, FunctionType]]:
    """The module's own test functions, in the order it defines them."""
    for name, obj in vars(module).items():
        if name.startswith("test_") and callable(obj) and \
                getattr(obj, "__module__", None) == module.__name__:
            yield name, obj
