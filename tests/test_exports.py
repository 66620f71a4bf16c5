"""The lazy exports of ``mluke`` and ``kb`` are visible to tools: every name of the lazy table is imported,
from the same module, under ``if TYPE_CHECKING:`` (and nothing else is), ``__all__`` lists them, and the
lazy table still keeps torch out of ``import mluke``; ``scripts/check_types.py`` (mypy --strict on the public API)
finds the modules those names come from."""

import ast
import importlib
import importlib.util
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


def _check_types():
    """``scripts/check_types.py`` imported by path (``scripts/`` is a folder of scripts, not a package)."""
    spec = importlib.util.spec_from_file_location("check_types", ROOT / "scripts" / "check_types.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_strict_type_check_covers_where_every_public_name_is_defined():
    """The modules ``scripts/check_types.py`` finds with ``ast`` are those where importing the public names leads
    (each class's and function's ``__module__``), with every package that has an ``__all__``; CI runs it."""
    check = _check_types()
    found = {path.as_posix() for path in check.public_modules()}
    packages = check.public_packages()
    assert {"kb", "mluke", "probes", "kb.db", "probes.transfer"} <= set(packages)
    expected = set()
    for package in packages:
        module = importlib.import_module(package)
        expected.add(Path(module.__file__).relative_to(ROOT).as_posix())
        for name in module.__all__:
            value = getattr(module, name)
            home = getattr(value, "__module__", None) if callable(value) else getattr(value, "__name__", None)
            if isinstance(home, str) and home.split(".")[0] in check.PACKAGES:
                expected.add(Path(importlib.import_module(home).__file__).relative_to(ROOT).as_posix())
    assert expected <= found, sorted(expected - found)
    assert "scripts/check_types.py" in (ROOT / ".ci" / "run").read_text(encoding="utf-8")


def test_an_export_that_nothing_defines_is_an_error(tmp_path, monkeypatch):
    check = _check_types()
    (tmp_path / "kb").mkdir()
    (tmp_path / "kb" / "__init__.py").write_text('from kb.gone import thing\n__all__ = ["thing"]\n', encoding="utf-8")
    monkeypatch.setattr(check, "ROOT", tmp_path)
    monkeypatch.setattr(check, "PACKAGES", ("kb",))
    with pytest.raises(check.ResolveError, match="gone"):
        check.public_modules()


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
