"""The core's packages that gather their modules' names (``bench``, ``tune``, ``probe``, ``source``) load a module
when one of its names is first asked for: one module of a package, or one name, does not load the rest. Every name
the package gives is the very object its module defines, by ``from PACKAGE import NAME``, by attribute, and by
``import *``.

The loading checks run in a fresh interpreter (this test process may have loaded every module already); the
positive control shows that asking for a name loads its module.
"""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("spectui.core.bench", "spectui.core.tune", "spectui.core.probe", "spectui.core.source")


def loaded_after(code: str) -> list[str]:
    """The spectui modules loaded by ``code`` in a fresh interpreter."""
    r = subprocess.run([sys.executable, "-c", code + "\nimport json, sys\n"
                        "print(json.dumps(sorted(m for m in sys.modules if m.startswith('spectui.'))))"],
                       cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    return json.loads(r.stdout.splitlines()[-1])


@pytest.mark.parametrize("code, not_loaded", [
    # what the live frames' step costs use: the probe's model, not its runs, requests or history
    ("from spectui.core.probe.predict import StepCosts",
     ["spectui.core.probe.history", "spectui.core.probe.run", "spectui.core.probe.request",
      "spectui.core.probe.topology"]),
    # what the acceptance per draft position uses: the acceptance model, not the predictions or the sweeps
    ("from spectui.core.tune import acceptance",
     ["spectui.core.tune.predict", "spectui.core.tune.adaptive", "spectui.core.tune.variants",
      "spectui.core.tune.sweep", "spectui.core.tune.run"]),
    # a preset, not the comparisons, their tables or sglang's files
    ("from spectui.core.bench import Preset",
     ["spectui.core.bench.compare", "spectui.core.bench.table", "spectui.core.bench.sglang_import",
      "spectui.core.bench.runs"]),
    # what the source browser returns, not the wheel download or the reference parser
    ("from spectui.core.source import TreeEntry",
     ["spectui.core.source.wheels", "spectui.core.source.browser", "spectui.core.source.refs"]),
], ids=["probe", "tune", "bench", "source"])
def test_one_name_loads_its_module_only(code, not_loaded):
    loaded = loaded_after(code)
    assert not set(not_loaded) & set(loaded), f"{code} loaded {sorted(set(not_loaded) & set(loaded))}"


def test_asking_for_a_name_loads_its_module():
    loaded = loaded_after("from spectui.core.bench import render_comparison\n"
                          "import spectui.core.source as s\ns.parse_ref")
    assert {"spectui.core.bench.table", "spectui.core.source.refs"} <= set(loaded), loaded


@pytest.mark.parametrize("package", PACKAGES)
def test_every_name_is_its_modules_own(package):
    pkg = importlib.import_module(package)
    assert pkg.__all__, package
    star: dict = {}
    exec(f"from {package} import *", star)  # noqa: S102 - the star import is what is checked
    for name in pkg.__all__:
        value = getattr(pkg, name)
        module = getattr(value, "__module__", None)
        if module and module.startswith(package + "."):  # a class or a function: where it is defined
            assert getattr(importlib.import_module(module), name) is value, (package, name)
        assert star[name] is value, (package, name)
        assert name in dir(pkg), (package, name)


def test_a_name_that_is_also_a_module_stays_the_name():
    """``spectui.core.probe.predict`` is a module, and ``predict`` the function the package gives."""
    import spectui.core.probe.predict  # noqa: F401 - loaded first, as the console does
    from spectui.core.probe import predict

    assert callable(predict) and not isinstance(predict, type(sys)), predict


def test_a_name_the_package_lacks_is_an_import_error():
    with pytest.raises(ImportError, match="no_such_name"):
        exec("from spectui.core.bench import no_such_name", {})  # noqa: S102
    import spectui.core.tune

    with pytest.raises(AttributeError, match="no_such_name"):
        spectui.core.tune.no_such_name  # noqa: B018
