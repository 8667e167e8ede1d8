"""Cold start: how long importing each Lambda handler module takes in a fresh interpreter.

Each `functions/<name>/app.py` is imported as Lambda imports it, in a new process, 5 times; the
median is reported. As in Lambda, the interpreter sees the function's folder, bench_core, the
core layer's requirements and the function's own (installed once for this machine into a cache
folder) and nothing else of this venv (`python -S`), so packages only the tests use cannot slow it down or speed it
up; the environment is what Lambda and the template set, so Powertools builds the X-Ray tracer
and patches botocore as it does there. What the first invocation adds is its own column, since
a cold first request pays both: building that tracer (the X-Ray SDK, patching botocore) and,
for an HTTP handler, importing the DynamoDB adapter (boto3).

    python tests/perf/cold_start.py [--runs 5] [--top 15] [--no-tracing] [--against DIR]

`--against DIR` measures another checkout's handlers too (say, a `git worktree` of an older
commit), alternating process by process so that both see the same load, and prints the ratio.

Not a test: the numbers depend on the machine (Lambda runs python3.12 on arm64, at roughly
half a vCPU with 1024 MB) and on its load: compare with the `import fastapi` reference line.
Goals: under 400 ms for every HTTP handler, 150 ms for the badge; no numpy, SciPy or
scikit-learn at import anywhere (the cluster function imports them when it computes).
`--top N` lists the N imports that cost the most (self time, from `python -X importtime`).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
FUNCTIONS = REPO / "functions"
GOALS_MS = {"badge": 150}
DEFAULT_GOAL_MS = 400
FASTAPI_WHEN_GOALS_SET_MS = 225
"""`import fastapi` on the machine the goals were set on (issue 4)."""
REFERENCES = ("boto3", "aws_xray_sdk.core", "aws_lambda_powertools")

MEASURE = """
import sys, time
start = time.perf_counter()
import app
handler_ms = (time.perf_counter() - start) * 1000
heavy = [m for m in ("numpy", "sklearn", "scipy") if m in sys.modules]
start = time.perf_counter()
try:
    from bench_core.runtime import lambda_instrumentation as telemetry
except ImportError:  # a checkout from before the layers (--against)
    from bench_core import telemetry
if telemetry.tracing_enabled():
    telemetry.tracer()
http = hasattr(app, "app") or hasattr(app, "ROUTES")  # an ASGI app, or routes it serves itself
if http:
    try:
        import bench_core.store.dynamodb.store, bench_core.reads.agents
    except ImportError:
        import bench_core.store.dynamodb, bench_core.views
first_ms = (time.perf_counter() - start) * 1000
print(f"{handler_ms:.1f} {first_ms:.1f} {int(http)} {','.join(heavy) or '-'}")
"""


def installed(requirements: Path) -> Path | None:
    """`requirements` installed for this machine, once per requirements file (cached in the
    temp folder); None when it lists nothing."""
    lines = [ln for ln in requirements.read_text().splitlines()
             if ln.strip() and not ln.strip().startswith("#")] if requirements.exists() else []
    if not lines:
        return None
    digest = hashlib.sha256("\n".join(lines).encode() + sys.version.encode()).hexdigest()[:12]
    target = Path(tempfile.gettempdir()) / f"bench-lambda-site-{digest}"
    if not (target / ".complete").exists():
        done = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--target",
                               str(target), "-r", str(requirements)], capture_output=True,
                              text=True)
        if done.returncode != 0:
            raise SystemExit(f"could not install {requirements}:\n{done.stderr}")
        (target / ".complete").touch()
    return target


def lambda_env(code_dir: Path, tracing: bool, layer_only: bool = False) -> dict[str, str]:
    """The variables Lambda's runtime and the template set, with fake credentials, for the
    function in `code_dir` (functions/<name> of a checkout); `layer_only`: its core layer alone,
    for the reference imports."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BENCH_", "AWS_"))}
    layer = code_dir.parents[1] / "layers" / "core"
    paths = [code_dir, layer, installed(layer / "requirements.txt"),
             installed(code_dir / "requirements.txt")]
    env.update({
        "PYTHONPATH": os.pathsep.join(str(p) for p in (paths[1:3] if layer_only else paths) if p),
        "LAMBDA_TASK_ROOT": str(code_dir), "AWS_LAMBDA_FUNCTION_NAME": f"bench-{code_dir.name}",
        "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "1024", "AWS_REGION": "us-east-1",
        "AWS_DEFAULT_REGION": "us-east-1", "AWS_ACCESS_KEY_ID": "x",
        "AWS_SECRET_ACCESS_KEY": "x", "BENCH_STORE": "dynamodb", "BENCH_TABLE_NAME": "bench",
        "BENCH_STAGE": "prod", "PYTHONDONTWRITEBYTECODE": "1",
    })
    if not tracing:
        env["POWERTOOLS_TRACE_DISABLED"] = "true"
    return env


def measure(code_dir: Path, runs: int, tracing: bool) -> tuple[float, float, bool, str] | str:
    """(import ms, first-call ms, whether it is an HTTP handler, heavy modules) as medians, or
    why the import failed."""
    handler, first, http, heavy = [], [], "0", "-"
    for _ in range(runs):
        done = subprocess.run([sys.executable, "-S", "-c", MEASURE], cwd=code_dir,
                              env=lambda_env(code_dir, tracing), capture_output=True, text=True)
        if done.returncode != 0:
            return done.stderr.strip().splitlines()[-1]
        h, f, http, heavy = done.stdout.split()
        handler.append(float(h))
        first.append(float(f))
    return statistics.median(handler), statistics.median(first), http == "1", heavy


def side_by_side(other: Path, runs: int, tracing: bool) -> bool:
    """Each handler of this checkout and of `other`, alternating fresh processes; False as soon
    as one fails to import."""
    print(f"{'handler':<12}{'this':>10}{'other':>10}{'this/other':>12}")
    for code_dir in sorted(p.parent for p in FUNCTIONS.glob("*/app.py")):
        twin = other / "functions" / code_dir.name
        if not (twin / "app.py").exists():
            print(f"{code_dir.name:<12}{'(only here)':>20}")
            continue
        ours, theirs = [], []
        for _ in range(runs):
            for folder, times in ((code_dir, ours), (twin, theirs)):
                result = measure(folder, 1, tracing)
                if isinstance(result, str):
                    print(f"{code_dir.name:<12}FAILED in {folder}: {result}")
                    return False
                times.append(result[0])
        a, b = statistics.median(ours), statistics.median(theirs)
        print(f"{code_dir.name:<12}{a:>8.0f}ms{b:>8.0f}ms{a / b:>12.2f}")
    return True


def reference(module: str, runs: int) -> float:
    code = f"import time; t = time.perf_counter(); import {module}; " \
           "print((time.perf_counter() - t) * 1000)"
    env = lambda_env(next(FUNCTIONS.glob("*/app.py")).parent, tracing=True, layer_only=True)
    times = [float(subprocess.run([sys.executable, "-S", "-c", code], env=env,
                                  capture_output=True, text=True, check=True).stdout)
             for _ in range(runs)]
    return statistics.median(times)


def top_imports(code_dir: Path, tracing: bool, count: int) -> list[tuple[int, str]]:
    done = subprocess.run([sys.executable, "-S", "-X", "importtime", "-c", "import app"],
                          cwd=code_dir, env=lambda_env(code_dir, tracing), capture_output=True,
                          text=True, check=True)
    rows = []
    for line in done.stderr.splitlines():
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        self_us, _, name = line.removeprefix("import time:").split("|")
        rows.append((int(self_us), name.strip()))
    return sorted(rows, reverse=True)[:count]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--top", type=int, default=0, help="list the N costliest imports")
    parser.add_argument("--no-tracing", action="store_true",
                        help="POWERTOOLS_TRACE_DISABLED, to see what the tracer costs")
    parser.add_argument("--against", type=Path, help="another checkout to measure side by side")
    args = parser.parse_args()

    tracing = not args.no_tracing
    if args.against:
        return 0 if side_by_side(args.against.resolve(), args.runs, tracing) else 1
    print(f"python {sys.version.split()[0]} on {os.uname().machine}, median of {args.runs} "
          f"fresh processes, X-Ray tracer {'built as in Lambda' if tracing else 'disabled'}")
    fastapi_ms = reference("fastapi", args.runs)
    print(f"import fastapi alone: {fastapi_ms:.0f} ms here, {FASTAPI_WHEN_GOALS_SET_MS} ms where "
          "the goals were set (a slower or busier machine scales everything)\n")
    print(f"{'handler':<12}{'import':>10}{'+ 1st call':>12}{'goal':>8}  verdict  "
          f"{'/ fastapi':>9}  heavy libs")
    failed = False
    for code_dir in sorted(p.parent for p in FUNCTIONS.glob("*/app.py")):
        result = measure(code_dir, args.runs, tracing)
        if isinstance(result, str):
            failed = True
            print(f"{code_dir.name:<12}{'FAILED':>10}  {result}")
            continue
        handler_ms, first_ms, http, heavy = result
        goal = GOALS_MS.get(code_dir.name, DEFAULT_GOAL_MS) if http else None
        ok = (goal is None or handler_ms < goal) and heavy == "-"
        failed |= not ok
        goal_text = f"{goal:>6}ms" if goal else f"{'-':>8}"
        print(f"{code_dir.name:<12}{handler_ms:>8.0f}ms{first_ms:>10.0f}ms{goal_text}  "
              f"{'ok' if ok else 'OVER':<7}  {handler_ms / fastapi_ms:>9.2f}  {heavy}")
    print(f"\nthe goals as fractions of `import fastapi` there: "
          f"{DEFAULT_GOAL_MS / FASTAPI_WHEN_GOALS_SET_MS:.2f} (HTTP), "
          f"{GOALS_MS['badge'] / FASTAPI_WHEN_GOALS_SET_MS:.2f} (badge)")
    print("\nfor reference, alone in a fresh process:")
    for module in REFERENCES:
        print(f"  import {module:<24}{reference(module, args.runs):>6.0f} ms")
    if args.top:
        for code_dir in sorted(p.parent for p in FUNCTIONS.glob("*/app.py")):
            print(f"\ncostliest imports of {code_dir.name} (self time):")
            for self_us, name in top_imports(code_dir, tracing, args.top):
                print(f"  {self_us / 1000:7.1f} ms  {name}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
