"""Run ``mypy --strict`` on the public API of kb, mluke and probes.

The public API is found, not listed: every package of the three whose ``__init__.py`` has a static
``__all__`` (the packages the API reference documents, see ``scripts/docs/gen_api.py``), and every module
that defines a name of those ``__all__`` lists. Names are followed from the ``__init__`` through its imports
(``from x import name``, under ``if TYPE_CHECKING:`` too, ``from x import *``, lazy tables such as
``_LAZY = {"probe": "mluke.probing.cloze"}``) to the module whose body defines them. Only ``ast`` is used: nothing is
imported, so the set follows a module when it moves and the check needs neither torch nor transformers.

Usage::

    python scripts/check_types.py           # mypy --strict on the public modules (extra arguments go to mypy)
    python scripts/check_types.py --list    # print the public modules, one file a line

mypy reads the project's configuration (``[tool.mypy]`` in pyproject.toml) as usual; ``--strict`` is added
and modules outside the list are followed silently (``--follow-imports=silent``): analysed for their types,
their own errors not counted here (the plain ``mypy`` run checks them, less strictly).
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("kb", "mluke", "probes")
#: ``--strict``; other modules analysed but their errors not shown; calls into torch and transformers allowed
#: where those libraries leave a function unannotated (their types are not ours to fix); the configuration's
#: per-module sections for C extensions are not "unused" because only part of the code is checked.
STRICT = (
    "--strict",
    "--follow-imports=silent",
    "--untyped-calls-exclude=torch",
    "--untyped-calls-exclude=transformers",
    "--no-warn-unused-configs",
)


class ResolveError(LookupError):
    """An exported name that no module of the project defines (a broken ``__all__`` or import)."""


def module_file(module: str) -> Path | None:
    """The source file of a dotted module of the project (its ``__init__.py`` for a package), or None."""
    base = ROOT.joinpath(*module.split("."))
    for candidate in (base / "__init__.py", base.with_suffix(".py")):
        if candidate.is_file():
            return candidate
    return None


def _is_package(path: Path) -> bool:
    return path.name == "__init__.py"


def _absolute(module: str, node: ast.ImportFrom) -> str:
    """The absolute module a ``from ... import`` names, relative imports resolved against ``module``."""
    if not node.level:
        return node.module or ""
    path = module_file(module)
    parts = module.split(".")
    if path is None or not _is_package(path):
        parts = parts[:-1]  # a plain module: its level-1 base is its package
    base = parts[: len(parts) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _top_statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Module-level statements, including those under ``if``/``try`` (``if TYPE_CHECKING:``, fallbacks)."""
    for node in body:
        yield node
        if isinstance(node, ast.If):
            yield from _top_statements(node.body)
            yield from _top_statements(node.orelse)
        elif isinstance(node, ast.Try):
            for block in (node.body, node.orelse, node.finalbody, *(h.body for h in node.handlers)):
                yield from _top_statements(block)


class Module:
    """What ``ast`` tells about one module: the names it defines, imports and exports."""

    def __init__(self, name: str, path: Path) -> None:
        self.name = name
        self.path = path
        self.tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        self.defined: set[str] = set()
        self.imported: dict[str, tuple[str, str | None]] = {}  # local name -> (module, name there or None)
        self.star: list[str] = []  # modules of ``from x import *``
        self.lazy: dict[str, str] = {}  # name -> module, from module-level dicts of string constants
        self.all_nodes: list[tuple[ast.expr, bool]] = []  # (value, augmented) of ``__all__`` assignments
        self.dict_keys: dict[str, list[str]] = {}
        for node in _top_statements(self.tree.body):
            self._read(node)

    def _read(self, node: ast.stmt) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            self.defined.add(node.name)
        elif isinstance(node, ast.ImportFrom):
            source = _absolute(self.name, node)
            for alias in node.names:
                if alias.name == "*":
                    self.star.append(source)
                else:
                    self.imported[alias.asname or alias.name] = (source, alias.name)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    self.imported[alias.asname] = (alias.name, None)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if not isinstance(target, ast.Name):
                    continue
                self.defined.add(target.id)
                if node.value is None:
                    continue
                if target.id == "__all__":
                    self.all_nodes.append((node.value, isinstance(node, ast.AugAssign)))
                elif isinstance(node.value, ast.Dict):
                    pairs = list(zip(node.value.keys, node.value.values))
                    self.dict_keys[target.id] = [
                        k.value for k, _ in pairs if isinstance(k, ast.Constant) and isinstance(k.value, str)
                    ]
                    for k, v in pairs:
                        if (
                            isinstance(k, ast.Constant)
                            and isinstance(k.value, str)
                            and isinstance(v, ast.Constant)
                            and isinstance(v.value, str)
                            and module_file(v.value) is not None
                        ):
                            self.lazy[k.value] = v.value


class Project:
    """The modules of kb, mluke and probes, parsed on demand."""

    def __init__(self) -> None:
        self._modules: dict[str, Module | None] = {}

    def module(self, name: str) -> Module | None:
        if name not in self._modules:
            path = module_file(name)
            self._modules[name] = Module(name, path) if path is not None else None
        return self._modules[name]

    def exports(self, name: str) -> list[str] | None:
        """The names a module's static ``__all__`` lists (None without one)."""
        module = self.module(name)
        if module is None or not module.all_nodes:
            return None
        names: list[str] = []
        for value, augmented in module.all_nodes:
            found = self._strings(module, value)
            names = names + found if augmented else found
        return names

    def _strings(self, module: Module, node: ast.expr) -> list[str]:
        if isinstance(node, (ast.List, ast.Tuple)):
            names: list[str] = []
            for elt in node.elts:
                if isinstance(elt, ast.Constant) and isinstance(elt.value, str):
                    names.append(elt.value)
                elif isinstance(elt, ast.Starred):
                    names.extend(self._strings(module, elt.value))
            return names
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            return self._strings(module, node.left) + self._strings(module, node.right)
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("list", "tuple")
            and len(node.args) == 1
            and not node.keywords
        ):
            return self._strings(module, node.args[0])  # ``list(_LAZY)``
        if isinstance(node, ast.Name) and node.id in module.dict_keys:
            return list(module.dict_keys[node.id])  # ``*_LAZY``: the keys of a module-level dict
        if isinstance(node, ast.Attribute) and node.attr == "__all__" and isinstance(node.value, ast.Name):
            source = module.imported.get(node.value.id)  # ``other.__all__`` of an imported sub-module
            if source is not None:
                target = source[0] if source[1] is None else f"{source[0]}.{source[1]}"
                return self.exports(target) or []
        raise ResolveError(f"{module.path}: cannot read __all__ statically from {ast.unparse(node)!r}")

    def definition(self, module_name: str, name: str, seen: frozenset[tuple[str, str]] = frozenset()) -> str:
        """The module whose body defines ``name`` as reached from ``module_name`` (or the sub-module it names)."""
        if (module_name, name) in seen:
            raise ResolveError(f"{module_name}.{name}: import cycle")
        seen = seen | {(module_name, name)}
        module = self.module(module_name)
        if module is None:
            raise ResolveError(f"{module_name}: no such module in {', '.join(PACKAGES)}")
        if name in module.imported:
            source, original = module.imported[name]
            if original is None:
                return source  # ``import a.b as name``
            if module_file(f"{source}.{original}") is not None:
                return f"{source}.{original}"  # ``from package import submodule``
            if module_file(source) is not None:
                return self.definition(source, original, seen)
            raise ResolveError(f"{module.path}: {name} comes from {source}, outside {', '.join(PACKAGES)}")
        if name in module.lazy:
            return self.definition(module.lazy[name], name, seen)
        if name in module.defined:
            return module_name
        for source in module.star:
            if name in (self.exports(source) or []):
                return self.definition(source, name, seen)
        if module_file(f"{module_name}.{name}") is not None:
            return f"{module_name}.{name}"
        raise ResolveError(f"{module.path}: __all__ names {name!r}, which it neither defines nor imports")


def public_packages() -> list[str]:
    """The three top packages and every sub-package whose ``__init__`` has a static ``__all__``."""
    found = []
    for top in PACKAGES:
        for init in sorted((ROOT / top).rglob("__init__.py")):
            if "__pycache__" in init.parts:
                continue
            dotted = ".".join(init.parent.relative_to(ROOT).parts)
            if dotted == top or Project().exports(dotted) is not None:
                found.append(dotted)
    return found


def public_modules() -> list[Path]:
    """The files mypy --strict checks: the public packages' ``__init__`` and the modules their names live in."""
    project = Project()
    modules: set[str] = set()
    for package in public_packages():
        modules.add(package)
        for name in project.exports(package) or []:
            modules.add(project.definition(package, name))
    files = {module_file(name) for name in modules}
    return sorted(path.relative_to(ROOT) for path in files if path is not None)


def main(argv: list[str]) -> int:
    try:
        files = public_modules()
    except ResolveError as error:
        print(f"check_types: {error}", file=sys.stderr)
        return 2
    if argv[:1] == ["--list"]:
        print("\n".join(path.as_posix() for path in files))
        return 0
    command = [sys.executable, "-m", "mypy", *STRICT, *argv, *map(str, files)]
    print(f"mypy --strict on {len(files)} public modules (scripts/check_types.py --list names them)", flush=True)
    return subprocess.run(command, cwd=ROOT).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
