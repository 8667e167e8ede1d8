"""Package every Lambda function as `sam build` would, for arm64 python3.12, and check the sizes.

`sam build` needs a local python3.12 and the SAM CLI; this stands in for it on any machine: each
layer's and function's requirements are resolved for Lambda's platform, the code is copied
beside them, and each function plus its layers must stay under Lambda's 250 MB unzipped limit.
It also refuses native code built for anything but aarch64 (a wrong wheel would only fail at
import time in Lambda).

    python scripts/package_check.py            # prints a table; exit 1 on any violation
    python scripts/package_check.py --json     # the same, machine-readable (for the test)

After a real `sam build`, `--built .aws-sam/build --python python3.12` checks what it built
instead: the same sizes and binaries, and every handler imported as Lambda will import it, in a
python3.12 without site-packages whose path is the function's folder and the layer's python/ as
built. Native libraries built for arm64 cannot load on another machine, so each distribution
holding one is installed for this machine at the very version the artifact holds, ahead of it.
The data files bench_core reads (the prompts and suites bundled from benchmarks/) and the SDK
wheel that /simple/ serves (built from sdk/ at its current version) must be in the layer.

pip's download cache is used, so reruns take seconds.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
TEMPLATE = REPO / "template.yaml"
LIMIT_BYTES = 250 * 1024 * 1024  # Lambda: function code + all its layers, unzipped
MAX_LAYERS = 5
PLATFORM_ARGS = ["--platform", "manylinux_2_28_aarch64", "--platform", "manylinux2014_aarch64",
                 "--python-version", "3.12", "--implementation", "cp",
                 "--only-binary=:all:"]
SKIPPED_SOURCE = {"requirements.txt", "__pycache__"}
ELF_MAGIC = b"\x7fELF"
EM_AARCH64 = 183
WATCHED = ("pydantic_core", "pydantic", "fastapi", "starlette", "mangum",
           "aws_lambda_powertools", "aws_xray_sdk", "boto3", "botocore", "mcp")


@dataclass
class Artifact:
    """One build output: a layer (what lands in /opt) or a function's code (/var/task)."""

    name: str
    kind: str
    source: Path
    path: Path
    size: int = 0
    zipped: int = 0
    strippable: int = 0
    versions: dict[str, str] = field(default_factory=dict)
    foreign_binaries: list[str] = field(default_factory=list)
    make_target: str | None = None
    """Set for `BuildMethod: makefile`: `sam build` runs this target of the folder's Makefile."""

    @property
    def site(self) -> Path:
        """Where its Python packages are: a layer's python/ (/opt/python), a function's root."""
        return self.path / "python" if self.kind == "layer" else self.path


def load_template() -> dict[str, Any]:
    from cfnlint.decode import decode_str

    template, problems = decode_str(TEMPLATE.read_text())
    if problems:
        raise SystemExit(f"{TEMPLATE} does not parse: {problems}")
    return json.loads(json.dumps(template))


def pip_install(requirements: Path, target: Path) -> None:
    """Resolve `requirements` for Lambda arm64 python3.12 into `target`. Both platform tags:
    with manylinux2014 alone pip silently picks old releases that still shipped such wheels."""
    lines = [ln for ln in requirements.read_text().splitlines()
             if ln.strip() and not ln.strip().startswith("#")] if requirements.exists() else []
    if not lines:
        return
    command = [sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
               "--no-compile", "--target", str(target), *PLATFORM_ARGS, "-r", str(requirements)]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"pip could not resolve {requirements} for arm64 python3.12:\n"
                         f"{done.stderr[-4000:]}")


def copy_source(source: Path, target: Path) -> None:
    """The code itself, as `sam build` copies a CodeUri/ContentUri folder (less caches)."""
    for entry in source.iterdir():
        if entry.name in SKIPPED_SOURCE or entry.name.endswith(".egg-info"):
            continue
        destination = target / entry.name
        if entry.is_dir():
            shutil.copytree(entry, destination, dirs_exist_ok=True,
                            ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(entry, destination)


def tree_size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink())


def strippable_size(path: Path) -> int:
    """What packages' own test suites and caches take: `sam build` keeps them (so the limit is
    checked with them), but a build that strips them would save this much."""
    dirs = [d for d in path.rglob("*") if d.is_dir() and d.name in ("tests", "__pycache__")
            and d.parent != path]
    outermost = [d for d in dirs if not any(o in d.parents for o in dirs)]
    return sum(tree_size(d) for d in outermost)


def zipped_size(path: Path) -> int:
    with tempfile.TemporaryFile() as handle:
        with zipfile.ZipFile(handle, "w", zipfile.ZIP_DEFLATED) as archive:
            for file in sorted(p for p in path.rglob("*") if p.is_file()):
                archive.write(file, file.relative_to(path))
        return handle.tell()


def foreign_binaries(path: Path) -> list[str]:
    """Native libraries built for another machine than aarch64."""
    foreign = []
    for file in path.rglob("*"):
        if file.suffix != ".so" and ".so." not in file.name:
            continue
        with file.open("rb") as handle:
            header = handle.read(20)
        if header[:4] == ELF_MAGIC and int.from_bytes(header[18:20], "little") != EM_AARCH64:
            foreign.append(str(file.relative_to(path)))
    return sorted(foreign)


def versions(path: Path) -> dict[str, str]:
    found = {}
    for info in path.glob("*.dist-info"):
        name, _, version = info.name.removesuffix(".dist-info").rpartition("-")
        if name.lower().replace("-", "_") in WATCHED:
            found[name.lower().replace("-", "_")] = version
    return dict(sorted(found.items()))


def make(artifact: Artifact) -> None:
    """A makefile build, as `sam build` runs it: the target with ARTIFACTS_DIR set."""
    done = subprocess.run(["make", "-s", "-C", str(artifact.source), str(artifact.make_target),
                           f"ARTIFACTS_DIR={artifact.path}", f"PYTHON={sys.executable}"],
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"make {artifact.make_target} failed for {artifact.name}:\n"
                         f"{done.stderr[-4000:]}")


def build(artifact: Artifact) -> Artifact:
    artifact.path.mkdir(parents=True, exist_ok=True)
    if artifact.make_target:
        make(artifact)
    else:  # a layer's Python code goes under python/ (/opt/python in Lambda)
        artifact.site.mkdir(exist_ok=True)
        pip_install(artifact.source / "requirements.txt", artifact.site)
        copy_source(artifact.source, artifact.site)
    measure(artifact)
    return artifact


def measure(artifact: Artifact) -> Artifact:
    artifact.size = tree_size(artifact.path)
    artifact.strippable = strippable_size(artifact.path)
    artifact.zipped = zipped_size(artifact.path)
    artifact.versions = versions(artifact.site)
    artifact.foreign_binaries = foreign_binaries(artifact.path)
    return artifact


def plan(template: dict[str, Any], work: Path) -> tuple[dict[str, Artifact],
                                                       dict[str, Artifact],
                                                       dict[str, list[str]]]:
    """The layers, the functions, and which layers each function runs with."""
    resources = template["Resources"]
    layers = {name: Artifact(name, "layer", REPO / r["Properties"]["ContentUri"],
                             work / "layers" / name, make_target=_make_target(name, r))
              for name, r in resources.items() if r["Type"] == "AWS::Serverless::LayerVersion"}
    functions = {name: Artifact(name, "function", REPO / r["Properties"]["CodeUri"],
                                work / "functions" / name, make_target=_make_target(name, r))
                 for name, r in resources.items() if r["Type"] == "AWS::Serverless::Function"}
    global_layers = template.get("Globals", {}).get("Function", {}).get("Layers", [])
    uses = {}
    for name in functions:
        refs = global_layers + resources[name]["Properties"].get("Layers", [])
        unknown = [r for r in refs if not (isinstance(r, dict) and r.get("Ref") in layers)]
        if unknown:
            raise SystemExit(f"{name} uses layers this check cannot build: {unknown}")
        uses[name] = [r["Ref"] for r in refs]
    return layers, functions, uses


# ---- what `sam build` built ---------------------------------------------------------------------

LAYER_DATA = ("bench_core/evals/eval-prompts.md", "bench_core/benchmarks/suites")
IMPORT_SCRIPT = """
import importlib, json, sys
sys.path[:0] = json.loads(sys.argv[1])
module, _, attribute = sys.argv[2].rpartition(".")
try:
    handler = getattr(importlib.import_module(module), attribute)
    error = None if callable(handler) else "handler is not callable"
except BaseException as exc:
    error = f"{type(exc).__name__}: {exc}"
print(json.dumps({"error": error}))
"""


def limit_problems(layers: dict[str, Artifact], functions: dict[str, Artifact],
                   uses: dict[str, list[str]]) -> tuple[dict[str, int], list[str]]:
    """Each function's unzipped size with its layers, and what breaks Lambda's limits or will
    not load there: native code for another machine, too many layers, data the layer lacks."""
    problems = [f"{a.name}: native code for another machine: {a.foreign_binaries[:5]}"
                for a in [*layers.values(), *functions.values()] if a.foreign_binaries]
    problems += layer_data_problems(layers)
    totals = {}
    for name, function in functions.items():
        totals[name] = function.size + sum(layers[layer].size for layer in uses[name])
        if totals[name] >= LIMIT_BYTES:
            problems.append(f"{name}: {mb(totals[name])} unzipped with its layers, over "
                            f"Lambda's {mb(LIMIT_BYTES)}")
        if len(uses[name]) > MAX_LAYERS:
            problems.append(f"{name}: {len(uses[name])} layers, over Lambda's {MAX_LAYERS}")
    return totals, problems


def layer_data_problems(layers: dict[str, Artifact]) -> list[str]:
    """The layer must hold the data bench_core reads, which lives in benchmarks/, and the
    wheel of the SDK in sdk/ at its current version, which /simple/ serves."""
    wheel = f"bench_core/sdk_dist/bench_observe-{sdk_version()}-py3-none-any.whl"
    problems = []
    for layer in layers.values():
        site = layer.path / "python"
        if not (site / "bench_core").is_dir():
            continue
        problems += [f"{layer.name}: {data} is not in the built layer (scripts/bundle_data.py)"
                     for data in LAYER_DATA if not (site / data).exists()]
        if not (site / wheel).is_file():
            found = sorted(p.name for p in (site / "bench_core/sdk_dist").glob("*.whl"))
            problems.append(f"{layer.name}: {wheel} is not in the built layer (found: "
                            f"{', '.join(found) or 'no wheel'}; layers/core/Makefile builds it)")
    return problems


def sdk_version() -> str:
    """The version sdk/bench/_version.py declares, read without importing the SDK."""
    text = (REPO / "sdk" / "bench" / "_version.py").read_text()
    match = re.search(r'^__version__ = "([^"]+)"', text, re.MULTILINE)
    assert match, "sdk/bench/_version.py declares no __version__"
    return match.group(1)


def built_plan(build_dir: Path) -> tuple[dict[str, Artifact], dict[str, Artifact],
                                          dict[str, list[str]], dict[str, str]]:
    """The built template's layers and functions (their folders under `build_dir`), which
    layers each function runs with, and each function's handler."""
    from cfnlint.decode import decode_str

    template, problems = decode_str((build_dir / "template.yaml").read_text())
    if problems:
        raise SystemExit(f"{build_dir / 'template.yaml'} does not parse: {problems}")
    resources = json.loads(json.dumps(template))["Resources"]
    layers = {name: Artifact(name, "layer", build_dir, build_dir / r["Properties"]["ContentUri"])
              for name, r in resources.items() if r["Type"] == "AWS::Serverless::LayerVersion"}
    functions = {name: Artifact(name, "function", build_dir, build_dir / r["Properties"]["CodeUri"])
                 for name, r in resources.items() if r["Type"] == "AWS::Serverless::Function"}
    _, _, uses = plan(load_template(), build_dir)  # the layers each function names
    handlers = {name: resources[name]["Properties"].get("Handler")
                or template.get("Globals", {}).get("Function", {}).get("Handler")
                for name in functions}
    return layers, functions, uses, handlers


def native_distributions(site: Path) -> dict[str, str]:
    """name -> version of each installed distribution that ships a compiled library."""
    found = {}
    for info in site.glob("*.dist-info"):
        record = (info / "RECORD").read_text() if (info / "RECORD").exists() else ""
        if any(p.endswith(".so") or ".so." in p for p in (ln.split(",")[0] for ln in record.splitlines())):
            metadata = dict(ln.split(": ", 1) for ln in (info / "METADATA").read_text().splitlines()
                            if ": " in ln and not ln.startswith(" "))
            found[metadata["Name"]] = metadata["Version"]
    return found


def host_copies(distributions: dict[str, str], target: Path, python: str) -> None:
    """`distributions` at exactly those versions, built for this machine, into `target`."""
    if not distributions:
        return
    command = [python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
               "--no-deps", "--no-compile", "--target", str(target),
               *(f"{name}=={version}" for name, version in sorted(distributions.items()))]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"cannot install this machine's builds of {distributions}:\n"
                         f"{done.stderr[-3000:]}")


def import_problem(function: Artifact, handler: str, path: list[Path], python: str) -> str | None:
    """Import `handler` as Lambda would, in a fresh python3.12 without site-packages."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8",
           "BENCH_STORE": "dynamodb", "BENCH_TABLE_NAME": "bench-import-check",
           "AWS_REGION": "us-east-1", "AWS_DEFAULT_REGION": "us-east-1",
           "AWS_ACCESS_KEY_ID": "import-check", "AWS_SECRET_ACCESS_KEY": "import-check"}
    done = subprocess.run([python, "-S", "-c", IMPORT_SCRIPT, json.dumps([str(p) for p in path]),
                           handler], cwd=function.path, env=env, capture_output=True, text=True,
                          timeout=120)
    if done.returncode != 0 or not done.stdout.strip():
        return f"{function.name}: the import check crashed: {done.stderr[-1500:]}"
    report = json.loads(done.stdout.strip().splitlines()[-1])
    if report["error"]:
        return f"{function.name}: {handler} does not import as Lambda would: {report['error']}"
    return None


def check_built(build_dir: Path, python: str, work: Path) -> tuple[dict[str, Any], list[str]]:
    """Sizes, binaries, bundled data and imports of what `sam build` wrote to `build_dir`."""
    done = subprocess.run([python, "-c", "import sys; print(sys.version_info[:2] == (3, 12))"],
                          capture_output=True, text=True)
    if done.stdout.strip() != "True":
        raise SystemExit(f"{python} is not Python 3.12, the runtime the functions run on")
    layers, functions, uses, handlers = built_plan(build_dir)
    for artifact in [*layers.values(), *functions.values()]:
        measure(artifact)
    totals, problems = limit_problems(layers, functions, uses)
    hosts = {}
    for name, artifact in [*layers.items(), *functions.items()]:
        hosts[name] = work / "host" / name
        host_copies(native_distributions(artifact.site), hosts[name], python)
    for name, function in functions.items():
        path = [hosts[name], *(hosts[layer] for layer in uses[name]), function.path,
                *(layers[layer].path / "python" for layer in uses[name])]
        problem = import_problem(function, handlers[name], path, python)
        if problem:
            problems.append(problem)
    report = {"limit_bytes": LIMIT_BYTES,
              "layers": {n: _public(a) for n, a in layers.items()},
              "functions": {n: {**_public(a), "layers": uses[n], "total_bytes": totals[n],
                                "handler": handlers[n]} for n, a in functions.items()},
              "problems": problems}
    return report, problems


def _make_target(name: str, resource: dict[str, Any]) -> str | None:
    return f"build-{name}" if resource.get("Metadata", {}).get("BuildMethod") == "makefile" else None


def mb(size: int) -> str:
    return f"{size / 1024 / 1024:7.1f} MB"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.add_argument("--keep", type=Path, help="build here and keep it (default: a temp dir)")
    parser.add_argument("--built", type=Path, help="check what `sam build` wrote here instead")
    parser.add_argument("--python", default=sys.executable,
                        help="a Python 3.12 for --built's import checks (default: this one)")
    args = parser.parse_args(argv)

    work = args.keep or Path(tempfile.mkdtemp(prefix="bench-package-"))
    try:
        if args.built:
            report, problems = check_built(args.built.resolve(), args.python, work)
            if args.json:
                print(json.dumps(report, indent=2))
            else:
                _print_built(report)
            return 1 if problems else 0
        layers, functions, uses = plan(load_template(), work)
        for artifact in [*layers.values(), *functions.values()]:
            build(artifact)
        totals, problems = limit_problems(layers, functions, uses)
        problems += [f"{a.name}: packages botocore without boto3, so the runtime's boto3 would "
                     "run on a botocore it was not released with"
                     for a in layers.values() if "botocore" in a.versions
                     and "boto3" not in a.versions]
        if args.json:
            print(json.dumps({
                "limit_bytes": LIMIT_BYTES,
                "layers": {n: _public(a) for n, a in layers.items()},
                "functions": {n: {**_public(a), "layers": uses[n], "total_bytes": totals[n]}
                              for n, a in functions.items()},
                "problems": problems}, indent=2))
        else:
            _print_table(layers, functions, uses, totals, problems)
        return 1 if problems else 0
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)


def _public(artifact: Artifact) -> dict[str, Any]:
    data = asdict(artifact)
    for name in ("source", "path"):
        data.pop(name)
    return data


def _print_built(report: dict[str, Any]) -> None:
    print("What `sam build` built, checked as Lambda (arm64 python3.12) will load it\n")
    print(f"{'function + its layers':<28}{'unzipped':>12}{'limit':>12}   handler")
    for name, function in report["functions"].items():
        print(f"{name:<28}{mb(function['total_bytes']):>12}{mb(report['limit_bytes']):>12}   "
              f"{function['handler']} imports")
    problems = report["problems"]
    print("\n" + ("\n".join(f"PROBLEM {p}" for p in problems) if problems else "OK"))


def _print_table(layers: dict[str, Artifact], functions: dict[str, Artifact],
                 uses: dict[str, list[str]], totals: dict[str, int], problems: list[str]) -> None:
    print("Lambda packages for arm64 python3.12, as `sam build` would make them\n")
    print(f"{'artifact':<28}{'unzipped':>12}{'zipped':>12}{'of it tests':>13}")
    for artifact in [*layers.values(), *functions.values()]:
        label = f"{artifact.kind} {artifact.name}"
        print(f"{label:<28}{mb(artifact.size):>12}{mb(artifact.zipped):>12}"
              f"{mb(artifact.strippable):>13}")
    print(f"\n{'function + its layers':<28}{'unzipped':>12}{'limit':>12}")
    for name, total in totals.items():
        print(f"{name:<28}{mb(total):>12}{mb(LIMIT_BYTES):>12}   layers: {', '.join(uses[name])}")
    for layer in layers.values():
        print(f"\n{layer.name} resolved: " + ", ".join(f"{k} {v}" for k, v in
                                                     layer.versions.items()))
    print("\n" + ("\n".join(f"PROBLEM {p}" for p in problems) if problems else "OK"))


if __name__ == "__main__":
    sys.exit(main())
