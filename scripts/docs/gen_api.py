"""Write the API reference (``reference/api/``) at build time: one page per package of kb, mluke and probes.

Each page shows the package's docstring and then every name of its ``__all__``, rendered by mkdocstrings
from the docstrings. Packages are found by walking the source tree and names are located with griffe
(static analysis, nothing is imported), so moving or renaming a module needs no edit here or in the
pages: a name exported lazily (``_LAZY = {"probe": "mluke.probing.cloze"}``, resolved by ``__getattr__``) is
documented where it is defined. Modules that no ``__all__`` names stay out of the reference.
"""

from __future__ import annotations

import ast
from pathlib import Path

import griffe
import mkdocs_gen_files

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("kb", "mluke", "probes")
OUT = Path("reference", "api")


def _strings(node: ast.expr, dicts: dict[str, list[str]]) -> list[str]:
    """The names a static ``__all__`` list or tuple holds (``*NAME`` of a module-level dict: its keys)."""
    names: list[str] = []
    if isinstance(node, (ast.List, ast.Tuple)):
        for elt in node.elts:
            if isinstance(elt, ast.Constant) and isinstance(elt.value, str):
                names.append(elt.value)
            elif isinstance(elt, ast.Starred) and isinstance(elt.value, ast.Name):
                names.extend(dicts.get(elt.value.id, []))
    return names


def exports(init: Path) -> tuple[list[str] | None, dict[str, str]]:
    """``__all__`` of a package (None without one) and its lazy map ``name -> defining module``."""
    tree = ast.parse(init.read_text(encoding="utf-8"))
    dicts: dict[str, list[str]] = {}
    lazy: dict[str, str] = {}
    exported = None
    for node in tree.body:
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        else:
            continue
        for target in targets:
            if not isinstance(target, ast.Name):
                continue
            if isinstance(value, ast.Dict):
                keys = [k.value for k in value.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)]
                dicts[target.id] = keys
                for k, v in zip(value.keys, value.values):
                    if isinstance(k, ast.Constant) and isinstance(v, ast.Constant) and isinstance(v.value, str):
                        lazy[str(k.value)] = v.value
            if target.id == "__all__":
                exported = _strings(value, dicts)
    return exported, lazy


def locate(package: griffe.Module, name: str, lazy: dict[str, str]) -> str:
    """The identifier mkdocstrings should render for ``package.name``."""
    if name in package.members:
        return f"{package.path}.{name}"
    if name in lazy:
        return f"{lazy[name]}.{name}"
    for module in _modules(package):
        member = module.members.get(name)
        if member is not None and not member.is_alias:
            return member.path
    raise LookupError(f"{package.path}.__all__ names {name!r}, which no module of the package defines")


def _modules(module: griffe.Module):
    for member in module.modules.values():
        yield member
        yield from _modules(member)


def packages() -> list[Path]:
    return [
        init.parent
        for top in PACKAGES
        for init in sorted((ROOT / top).rglob("__init__.py"))
        if "__pycache__" not in init.parts
    ]


def main() -> None:
    loaded = {top: griffe.load(top, search_paths=[str(ROOT)], resolve_aliases=False) for top in PACKAGES}
    nav = mkdocs_gen_files.Nav()
    for folder in packages():
        dotted = ".".join(folder.relative_to(ROOT).parts)
        exported, lazy = exports(folder / "__init__.py")
        if exported is None:
            continue  # no public names of its own (e.g. the command line: see the CLI reference)
        package = loaded[dotted.split(".")[0]]
        for part in dotted.split(".")[1:]:
            package = package.modules[part]
        page = OUT / (dotted.replace(".", "/") + ".md")
        nav[tuple(dotted.split("."))] = page.relative_to(OUT).as_posix()
        lines = [
            f"# `{dotted}`\n",
            f"::: {dotted}\n    options:\n      show_root_heading: false\n      members: false\n",
        ]
        for name in exported:
            ident = locate(package, name, lazy)
            lines.append(
                f"::: {ident}\n    options:\n      show_root_heading: true\n      show_root_full_path: false\n"
                f"      heading_level: 2\n"
            )
        with mkdocs_gen_files.open(page, "w") as out:
            out.write("\n".join(lines))
        mkdocs_gen_files.set_edit_path(page, (folder / "__init__.py").relative_to(ROOT))
    with mkdocs_gen_files.open(OUT / "SUMMARY.md", "w") as out:
        out.writelines(nav.build_literate_nav())


main()
