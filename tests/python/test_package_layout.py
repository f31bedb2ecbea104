"""The Python package's layering: modules import only downward, and importing fabricsim stays light."""

import ast
import json
import subprocess
import sys
import tempfile
import types
from pathlib import Path

import fabricsim

PACKAGE = Path(fabricsim.__file__).resolve().parent
REPO = Path(__file__).resolve().parents[2]
HEAVY = ("polars", "numpy", "matplotlib", "duckdb", "ray", "rich")


def _module_names() -> dict[str, Path]:
    """Every module of the package by dotted name (``__main__`` modules aside: they run on import)."""
    modules = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__main__":
            continue
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = path
    return modules


def _imports(path: Path, name: str, modules: dict[str, Path]) -> set[str]:
    """The package's modules that ``path`` imports, wherever the import statement is (functions and
    ``if TYPE_CHECKING:`` blocks included). ``from a import b`` counts as importing ``a.b`` when that is
    a module. A module's own parent packages, which Python imports first, are not counted."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            for alias in node.names:
                found.add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base)
    return {target for target in found if target in modules and target != name}


def _graph() -> dict[str, set[str]]:
    modules = _module_names()
    return {name: _imports(path, name, modules) for name, path in modules.items()}


def _cycle(graph: dict[str, set[str]]) -> list[str]:
    """One import cycle as a list of modules (first == last), or [] when there is none."""
    state: dict[str, str] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str]:
        state[node] = "open"
        stack.append(node)
        for target in sorted(graph[node]):
            if state.get(target) == "open":
                return [*stack[stack.index(target):], target]
            if target not in state:
                found = visit(target)
                if found:
                    return found
        stack.pop()
        state[node] = "done"
        return []

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return []


def test_the_import_graph_has_no_cycle():
    graph = _graph()
    assert "fabricsim.schema.scenario" in graph and "fabricsim.outputs.results" in graph
    cycle = _cycle(graph)
    assert not cycle, "import cycle: " + " -> ".join(cycle)


def test_the_cycle_check_finds_a_cycle():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) == []


def test_layers_import_only_lower_layers():
    """The base modules import nothing of the package above them; the schema knows nothing of
    outputs, runs, sweeps or the CLI; outputs nothing of running, sweeps or the CLI."""
    graph = _graph()

    def reach(start: str) -> set[str]:
        seen, todo = set(), [start]
        while todo:
            for target in graph[todo.pop()]:
                if target not in seen:
                    seen.add(target)
                    todo.append(target)
        return seen

    above = {
        "fabricsim.errors": ("fabricsim.",),
        "fabricsim.units": ("fabricsim.",),
        "fabricsim.devices": ("fabricsim.schema", "fabricsim.outputs", "fabricsim.runner"),
        "fabricsim.workloads.flowgen": ("fabricsim.schema", "fabricsim.outputs", "fabricsim.runner"),
        "fabricsim.schema": ("fabricsim.outputs", "fabricsim.runner", "fabricsim.sweeps", "fabricsim.cli"),
        # The registry of controllers added from outside the core sits below the schema.
        "fabricsim.extensions": ("fabricsim.schema", "fabricsim.outputs", "fabricsim.runner", "fabricsim.sweeps"),
        "fabricsim.outputs.results": ("fabricsim.runner", "fabricsim.sweeps", "fabricsim.cli", "fabricsim.bench"),
        "fabricsim.runner": ("fabricsim.sweeps", "fabricsim.cli", "fabricsim.experiments", "fabricsim.bench"),
        # The real-Linux lab knows nothing of the simulator; the dumbbell built on it nothing of the CLI.
        "fabricsim.validation.linux": (
            "fabricsim.schema", "fabricsim.outputs", "fabricsim.runner", "fabricsim.sweeps", "fabricsim.cli",
            "fabricsim.validation.dumbbell", "fabricsim.validation.linux_dumbbell",
        ),
        "fabricsim.validation.dumbbell": ("fabricsim.sweeps", "fabricsim.cli", "fabricsim.validation.linux_dumbbell"),
    }
    allowed = {"fabricsim.errors": {"fabricsim.units"}, "fabricsim.units": {"fabricsim.errors"}}
    for module, forbidden in above.items():
        wrong = sorted(
            target for target in reach(module) - allowed.get(module, set()) if target.startswith(forbidden)
        )
        assert not wrong, f"{module} imports {wrong}"


#: Packages split by job: each module imports only the ones before it (and the package's
#: ``__init__`` re-exports them; a module importing its own package would be a cycle).
JOB_ORDER = {
    "fabricsim.validation.linux": ("topology", "parsers", "probes", "namespaces", "jobs", "lab"),
    "fabricsim.validation.dumbbell": ("setup", "measurement", "episodes", "twin", "analysis", "tables", "band"),
}


def test_packages_split_by_job_import_only_earlier_jobs():
    graph = _graph()
    for package, order in JOB_ORDER.items():
        modules = {name for name in graph if name.startswith(package + ".")}
        assert modules == {f"{package}.{job}" for job in order}, f"{package}: modules and JOB_ORDER differ"
        for index, job in enumerate(order):
            later = {f"{package}.{other}" for other in order[index:]}
            wrong = sorted(graph[f"{package}.{job}"] & later)
            assert not wrong, f"{package}.{job} imports {wrong}, which come after it"


def test_no_package_attribute_hides_a_submodule():
    """``package.name`` is the submodule ``name`` wherever there is one: a function re-exported under
    a submodule's name would make ``import package.name as m`` give the function."""
    modules = _module_names()
    packages = sorted(name for name, path in modules.items() if path.name == "__init__.py")
    code = f"""
import importlib
hidden = []
for package in {packages!r}:
    for name in {sorted(modules)!r}:
        parent, _, last = name.rpartition(".")
        if parent == package:
            module = importlib.import_module(name)
            if getattr(importlib.import_module(package), last, None) is not module:
                hidden.append(name)
print("\\n".join(hidden))
"""
    assert _run_python(code).strip() == ""


def test_split_modules_keep_their_former_names():
    """Every public name of ``fabricsim.validation.linux`` and ``fabricsim.validation.dumbbell`` is the
    package's own object wherever it is defined, and ``linux_dumbbell`` (the former module) gives the
    same objects as the ``dumbbell`` package."""
    import fabricsim.validation.dumbbell as dumbbell
    import fabricsim.validation.linux as linux
    import fabricsim.validation.linux_dumbbell as linux_dumbbell

    for package in (linux, dumbbell):
        assert all(hasattr(package, name) for name in package.__all__)
    assert linux_dumbbell.__all__ == dumbbell.__all__
    public = [
        name for name, value in vars(dumbbell).items()
        if not name.startswith("_") and name != "annotations" and not isinstance(value, types.ModuleType)
    ]
    assert all(getattr(linux_dumbbell, name) is getattr(dumbbell, name) for name in public)
    assert linux.Lab.__module__ == "fabricsim.validation.linux.lab"


def _run_python(code: str, *args: str) -> str:
    result = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_every_module_imports_first_in_a_fresh_interpreter():
    """Each module imported first (all of the package's modules unloaded before each), so no import
    order depends on another module having been imported before."""
    names = sorted(_module_names())
    code = f"""
import importlib, sys
failed = []
for name in {names!r}:
    for loaded in [m for m in sys.modules if m.partition(".")[0] == "fabricsim" and m != "fabricsim._core"]:
        del sys.modules[loaded]
    try:
        importlib.import_module(name)
    except Exception as exc:
        failed.append(f"{{name}}: {{type(exc).__name__}}: {{exc}}")
print("\\n".join(failed))
"""
    assert _run_python(code).strip() == ""


def test_import_fabricsim_alone_loads_neither_the_schema_nor_its_libraries():
    """``import fabricsim`` loads its error types only: the schema (pydantic, PyYAML) comes with the
    first scenario loaded, so a command or a script that never reads one does not pay for it."""
    code = """
import json, sys
import fabricsim
print(json.dumps(sorted(name for name in sys.modules
                        if name.partition(".")[0] in ("pydantic", "pydantic_core", "yaml", "numpy", "polars")
                        or name.startswith(("fabricsim.schema", "fabricsim.outputs", "fabricsim.runner")))))
"""
    assert json.loads(_run_python(code)) == []


def test_import_fabricsim_loads_no_dataframe_plotting_sweep_or_console_library():
    code = f"""
import json, sys
import fabricsim
scenario = fabricsim.load("{REPO / 'scenarios' / 'quickstart.yaml'}")
scenario.to_resolved()
from fabricsim.cli.main import _parser
_parser()
print(json.dumps([name for name in {HEAVY!r} if name in sys.modules]
                 + [name for name in sys.modules if name.startswith("fabricsim.validation")]))
"""
    assert json.loads(_run_python(code)) == []


def test_running_imports_no_plotting_sweep_or_console_library_until_needed():
    code = f"""
import json, sys
import fabricsim
fabricsim.run, fabricsim.Result
print(json.dumps([name for name in {HEAVY!r} if name in sys.modules]))
"""
    assert set(json.loads(_run_python(code))) <= {"polars", "numpy"}


def test_a_udp_run_without_report_imports_no_numpy_and_no_unused_schema_section():
    """`fabricsim run --no-report` of a UDP scenario decodes and writes its tables with polars alone
    (numpy comes with TCP flows' FCT, workloads or large tables), and builds no validator of an
    optional section the scenario does not have."""
    code = f"""
import json, sys
from fabricsim.cli.main import main
main(["run", "{REPO / 'scenarios' / 'quickstart.yaml'}", "--out", sys.argv[1], "--no-report", "--no-progress"])
from fabricsim.schema.host import HostModel
from fabricsim.schema.pipeline import Pipeline
print(json.dumps([name for name in ("numpy", "matplotlib", "rich") if name in sys.modules]
                 + [cls.__name__ for cls in (HostModel, Pipeline) if cls.__pydantic_complete__]))
"""
    with tempfile.TemporaryDirectory() as out:
        assert json.loads(_run_python(code, out).splitlines()[-1]) == []


def test_the_core_runs_before_dataframes_or_plots_are_imported():
    """Nothing heavy is imported before the core runs: without the report not
    at all; with it, the report's preload imports them in its own thread beside
    the core (tests/python/test_preload.py), and the main thread has imported
    none of them when it starts that thread."""
    code = f"""
import json, sys
import fabricsim.runner as runner
seen = {{}}
def advance(sim, on_step, *busy):
    seen["advance"] = [name for name in {HEAVY!r} if name in sys.modules]
    raise SystemExit(0)
preload = runner._preload
def watched(progress):
    seen["preload"] = [name for name in {HEAVY!r} if name in sys.modules]
    return preload(progress)
runner._advance, runner._preload = advance, watched
from fabricsim.cli.main import main
try:
    main(["run", "{REPO / 'scenarios' / 'quickstart.yaml'}", "--out", sys.argv[1], "--no-progress", *sys.argv[2:]])
except SystemExit:
    pass
print(json.dumps(seen))
"""
    with tempfile.TemporaryDirectory() as out:
        assert json.loads(_run_python(code, out, "--no-report")) == {"advance": []}
    with tempfile.TemporaryDirectory() as out:
        assert json.loads(_run_python(code, out)).get("preload") == []


def test_version_is_looked_up_on_demand():
    assert fabricsim.__version__ and "__version__" in dir(fabricsim)


def test_lazy_public_names_are_the_real_ones():
    from fabricsim.outputs.results import Result
    from fabricsim.runner import run

    from fabricsim.schema import Scenario, from_dict, load, loads

    assert fabricsim.Result is Result and fabricsim.run is run
    assert (fabricsim.Scenario, fabricsim.load, fabricsim.loads, fabricsim.from_dict) == (
        Scenario, load, loads, from_dict)
    assert {"Result", "run", "load", "Scenario"} <= set(dir(fabricsim))
