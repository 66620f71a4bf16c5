"""The project's promises about itself: CI runs the README's test command; packages stay layered."""

import ast
import re
import sys
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


#: Who may import what: a module inside the first prefix, unless it is inside one of the exceptions (the third),
#: may not import any module inside one of the forbidden prefixes (the second). The command line (``mluke.cli``)
#: is the outermost layer of ``mluke`` and imports ``kb`` and ``mluke`` only: the commands that run ``probes``
#: live in ``probes.cli`` (the one part of ``probes`` that uses ``mluke.cli``) and reach the ``mluke`` command
#: through entry points. Nothing of ``mluke`` but ``python -m mluke`` imports the command line.
RULES = [
    ("kb", ("mluke", "probes", "torch", "transformers"), ()),
    ("kb.db", ("kb.mentions", "kb.sources", "kb.vocab", "kb.entities"), ()),
    ("kb.mentions", ("kb.sources", "kb.vocab", "kb.entities"), ()),
    ("kb.sources", ("kb.mentions", "kb.entities"), ()),
    ("kb.vocab", ("kb.mentions", "kb.sources", "kb.entities"), ()),
    ("mluke", ("probes",), ()),
    ("mluke", ("mluke.cli",), ("mluke.cli", "mluke.__main__")),
    ("probes", ("mluke.cli",), ("probes.cli",)),
]
SOURCES = sorted(p for package in ("kb", "mluke", "probes") for p in (ROOT / package).rglob("*.py"))


def _inside(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


@pytest.mark.parametrize("layer, forbidden, exceptions", RULES, ids=[f"{r[0]}-not-{'-'.join(r[1])}" for r in RULES])
def test_data_flows_one_way(layer, forbidden, exceptions):
    broken = []
    for path in SOURCES:
        module = _module(path)
        if not _inside(module, layer) or any(_inside(module, e) for e in exceptions):
            continue
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


def _is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _private_uses(path: Path) -> set[str]:
    """The private names of other kb/mluke/probes modules that ``path`` imports (``from m import _x``, or a
    private module) or reads from an imported module (``m._x``)."""
    me = _module(path)
    tree = ast.parse(path.read_text(encoding="utf-8"))
    modules: dict[str, str] = {}  # local name -> the kb/mluke/probes module it is bound to
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0 and node.module in MODULES:
            for alias in node.names:
                submodule = f"{node.module}.{alias.name}"
                if submodule in MODULES:
                    modules[alias.asname or alias.name] = submodule
                if _is_private(alias.name) and node.module != me:
                    found.add(submodule)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in MODULES:  # `import a.b` binds a; `import a.b as c` binds c to a.b
                    modules[alias.asname or alias.name.split(".")[0]] = (
                        alias.name if alias.asname else alias.name.split(".")[0]
                    )
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Attribute) and _is_private(node.attr)):
            continue
        chain, value = [], node.value
        while isinstance(value, ast.Attribute):
            chain.append(value.attr)
            value = value.value
        if isinstance(value, ast.Name) and value.id in modules:
            target = ".".join([modules[value.id], *reversed(chain)])
            if target in MODULES and target != me:
                found.add(f"{target}.{node.attr}")
    return found


def test_private_uses_are_found(tmp_path, monkeypatch):
    source = tmp_path / "example.py"
    source.write_text(
        "import mluke.models.masked_lm\nfrom kb import files\nfrom kb.files import _x, y\n"
        "def f():\n    return mluke.models.masked_lm._y, files._z, files.public\n",
        encoding="utf-8",
    )
    monkeypatch.setattr(sys.modules[__name__], "_module", lambda path: "example")
    assert _private_uses(source) == {"kb.files._x", "mluke.models.masked_lm._y", "kb.files._z"}


def test_no_private_name_crosses_a_module():
    """A private name used by another module of kb, mluke or probes is a missing public function (tests may
    still reach private names)."""
    crossing = sorted(f"{module} uses {name}" for module, path in MODULES.items() for name in _private_uses(path))
    assert not crossing, "\n".join(crossing)


#: The most lines a module of ``mluke`` may have: beyond it, a module holds more than one job.
MAX_LINES = 400


def test_no_mluke_module_is_too_long():
    long = {
        m: n
        for m, p in MODULES.items()
        if _inside(m, "mluke") and (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    assert not long, f"modules over {MAX_LINES} lines (split them by job): {long}"


def _room(module: str) -> str | None:
    """The direct child of ``mluke`` (a sub-package or a module) that ``module`` lies in, None outside mluke
    or for the package itself."""
    parts = module.split(".")
    return ".".join(parts[:2]) if parts[0] == "mluke" and len(parts) > 1 else None


def _rooms() -> dict[str, set[str]]:
    """The rooms of mluke and, for each, the other rooms its modules import (at any depth of the code)."""
    graph: dict[str, set[str]] = {}
    for module, path in MODULES.items():
        room = _room(module)
        if room is not None:
            graph.setdefault(room, set()).update(
                r for m in _imported_modules(path) if (r := _room(m)) not in (None, room)
            )
    return graph


def _floors(graph: dict[str, set[str]]) -> list[str]:
    """The longest path of an acyclic graph, from its top."""
    longest: dict[str, list[str]] = {}
    for node in _topological(graph):
        below = max((longest[n] for n in graph[node]), key=len, default=[])
        longest[node] = [node, *below]
    return max(longest.values(), key=len, default=[])


def _topological(graph: dict[str, set[str]]) -> list[str]:
    """The nodes, each after every node it points to."""
    done: list[str] = []
    seen: set[str] = set()

    def visit(node: str) -> None:
        if node not in seen:
            seen.add(node)
            for following in sorted(graph[node]):
                visit(following)
            done.append(node)

    for node in sorted(graph):
        visit(node)
    return done


#: The most rooms on one chain of imports through mluke, the command line and ``python -m mluke`` included
#: (9 since the service, ``mluke.serve``, stands between the command line and the probing and linking rooms; 10
#: since ``mluke.distributed`` runs linking and span vectors, ``mluke.spans``, on a cluster, under the command line).
MAX_FLOORS = 10


def test_floors_of_a_graph():
    assert _floors({"a": {"b", "c"}, "b": {"c"}, "c": set(), "d": set()}) == ["a", "b", "c"]


def test_mluke_rooms_stack_without_a_cycle_on_few_floors():
    """Each direct child of mluke (a sub-package such as ``mluke.linking`` or a module such as ``mluke.options``)
    is a room; rooms import each other without a cycle, and the longest chain of imports crosses at most
    :data:`MAX_FLOORS` rooms, so that a reader finds each room's place."""
    graph = _rooms()
    cycle = _a_cycle(graph)
    assert cycle is None, "rooms import each other in a cycle: " + " -> ".join(cycle or [])
    floors = _floors(graph)
    assert len(floors) <= MAX_FLOORS, f"{len(floors)} floors: " + " -> ".join(floors)


def test_the_commands_of_probes_join_the_mluke_command_through_entry_points():
    """pyproject.toml declares each command of ``probes.cli`` in the group ``mluke.commands`` under its own name;
    the installed metadata has them (``pip install -e .`` after a change), and ``mluke`` lists each right after
    the command it names, so that ``mluke --help`` reads as if the command line held them itself."""
    import importlib
    from importlib.metadata import entry_points

    import typer.main

    from mluke.cli import OWN_COMMANDS, app
    from mluke.cli.registry import GROUP, Command, ordered

    try:
        import tomllib
    except ImportError:  # Python 3.10
        import tomli as tomllib
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["entry-points"][GROUP]
    commands = []
    for name, target in declared.items():
        module, _, attribute = target.partition(":")
        assert _inside(module, "probes.cli"), target
        command = getattr(importlib.import_module(module), attribute)
        assert isinstance(command, Command) and command.name == name
        commands.append(command)
    assert {p.name: p.value for p in entry_points(group=GROUP)} == declared, "run `pip install -e .` again"
    listed = ordered(OWN_COMMANDS, commands)
    assert all(c.after in [d.name for d in listed[:i]] for i, c in enumerate(listed) if c in commands)
    assert set(typer.main.get_command(app).commands) == {c.name for c in listed}
