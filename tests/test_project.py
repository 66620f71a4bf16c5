"""The project's promises about itself: CI runs the README's test command; packages stay layered."""

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_ci_runs_the_readme_test_command():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    match = re.search(r"<!-- test-command -->\s*```(?:bash|sh)?\n(.+?)\n```", readme, re.S)
    assert match, "README must show the test command after <!-- test-command -->"
    command = match.group(1).strip()
    assert command in (ROOT / ".ci" / "run").read_text(encoding="utf-8")


def test_readme_is_a_front_page_that_links_only_to_existing_files():
    """README stays short (the rest lives on the documentation site) and none of its links is broken."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 220
    targets = re.findall(r"\]\(([^)\s]+)\)", readme)
    assert len(targets) >= 20  # the docs pages, the six notebooks and the benchmarks are linked
    for notebook in sorted((ROOT / "notebooks").glob("*.ipynb")):
        assert f"notebooks/{notebook.name}" in targets, f"README does not link {notebook.name}"
    assert "benchmarks/RESULTS.md" in targets
    missing = []
    headings = {
        re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in re.findall(r"^#+ (.+)$", readme, re.M)
    }
    for target in targets:
        if re.match(r"[a-z]+:", target):
            continue  # a URL: not checked offline
        path, _, anchor = target.partition("#")
        if not path:
            if anchor not in headings:
                missing.append(target)
        elif not (ROOT / path).exists():
            missing.append(target)
    assert not missing, f"README links to files or sections that do not exist: {missing}"


def test_ci_builds_the_documentation_strictly():
    """.ci/run builds the site with --strict, so a broken link in docs/ fails CI."""
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert re.search(r"mkdocs build --strict", ci)
    assert (ROOT / "mkdocs.yml").exists()


def _module(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> set[str]:
    """Every module ``path`` imports, at any depth of the code (imports inside functions count too)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{a.name}" for a in node.names)
    return found


#: Who may import what, outermost layer first: a module matching the first prefix may not import any
#: module matching one of the others. The CLI (``mluke.cli``) is the outermost layer, the only one that
#: uses all three packages; nothing but ``python -m mluke`` imports it.
RULES = [
    ("kb", ("mluke", "probes", "torch", "transformers")),
    ("kb.db", ("kb.mentions", "kb.sources", "kb.vocab", "kb.entities")),
    ("kb.mentions", ("kb.sources", "kb.vocab", "kb.entities")),
    ("kb.sources", ("kb.mentions", "kb.entities")),
    ("kb.vocab", ("kb.mentions", "kb.sources", "kb.entities")),
    ("mluke", ("probes", "mluke.cli")),
    ("probes", ("mluke.cli",)),
]
SOURCES = sorted(p for package in ("kb", "mluke", "probes") for p in (ROOT / package).rglob("*.py"))


def _inside(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


@pytest.mark.parametrize("layer, forbidden", RULES, ids=[r[0] for r in RULES])
def test_data_flows_one_way(layer, forbidden):
    broken = []
    for path in SOURCES:
        module = _module(path)
        if not _inside(module, layer) or _inside(module, "mluke.cli") or module == "mluke.__main__":
            continue  # the outermost layer
        broken += [
            f"{module} imports {name}" for name in sorted(_imports(path)) if any(_inside(name, f) for f in forbidden)
        ]
    assert not broken


#: Imports whose distribution is not the importing name's (or is not installed where the tests run).
INDIRECT = {"torch.utils.tensorboard": "tensorboard", "tomli": "tomli"}
#: Extras that only tests and benchmarks use: the library may not rely on them.
NOT_FOR_THE_LIBRARY = ("test", "bench")


def _distribution_key(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _declared() -> set[str]:
    try:
        import tomllib
    except ImportError:  # Python 3.10
        import tomli as tomllib
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    requirements = list(project["dependencies"])
    for extra, extra_requirements in project["optional-dependencies"].items():
        if extra not in NOT_FOR_THE_LIBRARY:
            requirements += extra_requirements
    return {_distribution_key(re.match(r"[A-Za-z0-9_.-]+", r).group(0)) for r in requirements}


def test_every_third_party_import_of_the_library_is_declared():
    """kb, mluke and probes import only what pyproject.toml declares (as a dependency or a library extra),
    so that `pip install mluke[...]` gives every module what it imports."""
    import sys
    from importlib.metadata import packages_distributions

    installed = packages_distributions()
    declared = _declared()
    missing = []
    for path in SOURCES:
        for name in sorted(_imports(path)):
            top = name.split(".")[0]
            if top in sys.stdlib_module_names or top in ("kb", "mluke", "probes"):
                continue
            indirect = next((d for prefix, d in INDIRECT.items() if _inside(name, prefix)), None)
            dists = [indirect] if indirect else installed.get(top)
            if not dists:
                missing.append(f"{_module(path)} imports {name}, which no installed distribution provides")
            elif not any(_distribution_key(d) in declared for d in dists):
                missing.append(f"{_module(path)} imports {name} ({', '.join(dists)}), not declared in pyproject.toml")
    assert not missing, "\n".join(sorted(set(missing)))


def test_the_floor_environment_installs_what_pyproject_and_readme_declare():
    """scripts/setup_floor.sh installs the ``>=`` floors of these four from pyproject.toml; README states them."""
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    script = (ROOT / "scripts" / "setup_floor.sh").read_text(encoding="utf-8")
    for name in ("torch", "transformers", "tokenizers", "numpy"):
        floor = re.search(rf'^\s*"{name}>=([0-9][0-9.]*)"', pyproject, re.M)
        assert floor, f"pyproject.toml: no {name}>=X floor"
        assert f"`{name}>={floor.group(1)}`" in readme, f"README does not state {name}>={floor.group(1)}"
        assert f'"{name}"' in script
    assert "bash scripts/setup_floor.sh" in (ROOT / ".ci" / "run").read_text(encoding="utf-8")


MODULES = {_module(p): p for p in SOURCES}


def _imported_modules(path: Path) -> set[str]:
    """The kb/mluke/probes modules ``path`` imports, at any depth: ``from a.b import c`` names the module
    ``a.b.c`` when there is one, else ``a.b`` (a package's ``__init__`` is not counted as imported by its
    own submodules' ``from package import submodule``)."""

    def known(name: str) -> str | None:
        parts = name.split(".")
        return next((m for i in range(len(parts), 0, -1) if (m := ".".join(parts[:i])) in MODULES), None)

    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(known(a.name) for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                submodule = f"{node.module}.{alias.name}"
                found.add(submodule if submodule in MODULES else known(node.module))
    return found - {None, _module(path)}


def _a_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of ``graph`` (``[a, b, ..., a]``), or None when it has none (iterative depth-first search)."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    for start in sorted(graph):
        if start in state:
            continue
        path, todo = [start], [iter(sorted(graph[start]))]
        state[start] = 1
        while todo:
            following = next(todo[-1], None)
            if following is None:
                state[path.pop()] = 2
                todo.pop()
            elif state.get(following) == 1:
                return [*path[path.index(following) :], following]
            elif following not in state:
                state[following] = 1
                path.append(following)
                todo.append(iter(sorted(graph[following])))
    return None


def test_a_cycle_is_found():
    assert _a_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == ["a", "b", "c", "a"]
    assert _a_cycle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) is None


def test_no_import_cycle():
    """The modules of kb, mluke and probes import each other without a cycle, counting imports inside
    functions: a cycle hidden behind a function-level import is still a cycle."""
    graph = {module: _imported_modules(path) for module, path in MODULES.items()}
    cycle = _a_cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])
