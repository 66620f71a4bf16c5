"""The lazy exports of ``mluke`` and ``kb`` are visible to tools: every name of the lazy table is imported,
from the same module, under ``if TYPE_CHECKING:`` (and nothing else is), ``__all__`` lists them, and the
lazy table still keeps torch out of ``import mluke``."""

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _parts(package: str, table: str) -> tuple[dict[str, str], dict[str, str], ast.Module]:
    """(the lazy table, the TYPE_CHECKING imports name -> module, the module's tree)."""
    tree = ast.parse((ROOT / package / "__init__.py").read_text(encoding="utf-8"))
    lazy = dict(getattr(importlib.import_module(package.replace("/", ".")), table))
    checked: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            for item in node.body:
                assert isinstance(item, ast.ImportFrom), ast.unparse(item)
                for alias in item.names:
                    assert alias.asname in (None, alias.name), ast.unparse(item)
                    checked[alias.name] = item.module or ""
    return lazy, checked, tree


def test_mluke_all_lazy_table_and_type_checking_imports_agree():
    lazy, checked, _ = _parts("mluke", "_LAZY")
    assert lazy and checked == lazy
    mluke = importlib.import_module("mluke")
    assert mluke.__all__ == ["MlukeError", "__version__", *lazy]
    for name, module in lazy.items():
        assert getattr(mluke, name) is getattr(importlib.import_module(module), name)


def test_kb_moved_names_and_type_checking_imports_agree():
    moved, checked, _ = _parts("kb", "_MOVED")
    assert moved and checked == moved
    kb = importlib.import_module("kb")
    for name, module in moved.items():
        assert name not in kb.__all__ and getattr(kb, name) is getattr(importlib.import_module(module), name)


@pytest.mark.parametrize("package", ["mluke", "kb"])
def test_importing_the_package_does_not_import_torch(package):
    code = f"import sys, {package}; print('torch' in sys.modules, 'transformers' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.split() == ["False", "False"], out.stderr


SUBPACKAGES = ["mluke.models", "mluke.probing", "mluke.linking", "mluke.demo"]


@pytest.mark.parametrize("package", SUBPACKAGES)
def test_subpackage_lazy_tables_agree_and_shadow_no_module(package):
    """A sub-package's lazy exports are imported under TYPE_CHECKING too and listed in ``__all__``, and none
    is named like one of its modules (after ``import package.name`` the module would replace the export)."""
    lazy, checked, _ = _parts(package.replace(".", "/"), "_LAZY")
    assert lazy and checked == lazy
    module = importlib.import_module(package)
    assert module.__all__ == list(lazy)
    assert module.__doc__
    submodules = {p.stem for p in (ROOT / package.replace(".", "/")).glob("*.py")}
    assert not set(lazy) & submodules
    for name, defining in lazy.items():
        assert getattr(module, name) is getattr(importlib.import_module(defining), name)
