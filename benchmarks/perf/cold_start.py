"""Cold start: how long importing each Lambda handler module takes in a fresh interpreter.

Each `functions/<name>/app.py` is imported as Lambda imports it, in a new process, 5 times; the
median is reported. As in Lambda, the interpreter sees the function's folder, bench_core, the
core layer's requirements and the function's own (installed once for this machine into a cache
folder) and nothing else of this venv (`python -S`), so packages only the tests use cannot slow it down or speed it
up; the environment is what Lambda and the template set, so Powertools builds the X-Ray tracer
and patches botocore as it does there. The DynamoDB adapter (boto3) is imported on the first
request, not at import: its cost is its own column, since a cold first request pays both.

    python benchmarks/perf/cold_start.py [--runs 5] [--top 15] [--no-tracing]

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
LAYER = REPO / "layers" / "core"
GOALS_MS = {"badge": 150}
DEFAULT_GOAL_MS = 400
REFERENCES = ("fastapi", "boto3", "aws_xray_sdk.core", "aws_lambda_powertools")

MEASURE = """
import sys, time
start = time.perf_counter()
import app
handler_ms = (time.perf_counter() - start) * 1000
start = time.perf_counter()
import bench_core.store.dynamodb
store_ms = (time.perf_counter() - start) * 1000
heavy = [m for m in ("numpy", "sklearn", "scipy") if m in sys.modules]
print(f"{handler_ms:.1f} {store_ms if hasattr(app, 'app') else -1:.1f} {','.join(heavy) or '-'}")
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


def lambda_env(code_dir: Path, tracing: bool) -> dict[str, str]:
    """The variables Lambda's runtime and the template set, with fake credentials."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BENCH_", "AWS_"))}
    env.update({
        "PYTHONPATH": os.pathsep.join(str(p) for p in [
            code_dir, LAYER, installed(LAYER / "requirements.txt"),
            installed(code_dir / "requirements.txt")] if p),
        "LAMBDA_TASK_ROOT": str(code_dir), "AWS_LAMBDA_FUNCTION_NAME": f"bench-{code_dir.name}",
        "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "1024", "AWS_REGION": "us-east-1",
        "AWS_DEFAULT_REGION": "us-east-1", "AWS_ACCESS_KEY_ID": "x",
        "AWS_SECRET_ACCESS_KEY": "x", "BENCH_STORE": "dynamodb", "BENCH_TABLE_NAME": "bench",
        "BENCH_STAGE": "prod", "PYTHONDONTWRITEBYTECODE": "1",
    })
    if not tracing:
        env["POWERTOOLS_TRACE_DISABLED"] = "true"
    return env


def measure(code_dir: Path, runs: int, tracing: bool) -> tuple[float, float, str] | str:
    """(import ms, store import ms or -1, heavy modules) as medians, or why the import failed."""
    handler, store, heavy = [], [], "-"
    for _ in range(runs):
        done = subprocess.run([sys.executable, "-S", "-c", MEASURE], cwd=code_dir,
                              env=lambda_env(code_dir, tracing), capture_output=True, text=True)
        if done.returncode != 0:
            return done.stderr.strip().splitlines()[-1]
        h, s, heavy = done.stdout.split()
        handler.append(float(h))
        store.append(float(s))
    return statistics.median(handler), statistics.median(store), heavy


def reference(module: str, runs: int) -> float:
    code = f"import time; t = time.perf_counter(); import {module}; " \
           "print((time.perf_counter() - t) * 1000)"
    env = lambda_env(FUNCTIONS, tracing=True)
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
    args = parser.parse_args()

    tracing = not args.no_tracing
    print(f"python {sys.version.split()[0]} on {os.uname().machine}, median of {args.runs} "
          f"fresh processes, X-Ray tracer {'built as in Lambda' if tracing else 'disabled'}\n")
    print(f"{'handler':<12}{'import':>10}{'+ store':>10}{'goal':>8}  verdict  heavy libs")
    failed = False
    for code_dir in sorted(p.parent for p in FUNCTIONS.glob("*/app.py")):
        result = measure(code_dir, args.runs, tracing)
        if isinstance(result, str):
            failed = True
            print(f"{code_dir.name:<12}{'FAILED':>10}  {result}")
            continue
        handler_ms, store_ms, heavy = result
        http = store_ms >= 0  # an HTTP handler (it has an ASGI app and reads the store)
        goal = GOALS_MS.get(code_dir.name, DEFAULT_GOAL_MS) if http else None
        ok = (goal is None or handler_ms < goal) and heavy == "-"
        failed |= not ok
        store = f"{store_ms:>8.0f}ms" if http else f"{'-':>10}"
        goal_text = f"{goal:>6}ms" if goal else f"{'-':>8}"
        print(f"{code_dir.name:<12}{handler_ms:>8.0f}ms{store}{goal_text}  "
              f"{'ok' if ok else 'OVER':<7}  {heavy}")
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
