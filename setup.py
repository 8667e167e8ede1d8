"""The wheel's two additions to pyproject.toml, made when the package is built:

- the data that lives once in `benchmarks/` (the judge's prompts, the benchmark suites) is
  copied into the built bench_core, where an installed server finds it (scripts/bundle_data.py,
  shared with the layer build);
- the SDK wheel `/simple/` serves is built from `sdk/` into bench_core/sdk_dist/, so a server
  installed any way (`pip install .`, a container, an sdist) serves its own SDK, as the core
  layer does (reads/sdk_index.py). An editable install runs from the repository: the SDK wheel
  is built there, where `make sdk-wheel` keeps it current.
"""

import importlib.util
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent
SDK_DIST = Path("bench_core") / "sdk_dist"
# builds sdk/ with its own backend, which is this build's (setuptools): no network, no pip
BUILD_SDK = "import sys\nfrom setuptools import build_meta\nbuild_meta.build_wheel(sys.argv[1])"


class BuildWithData(build_py):
    def run(self) -> None:
        super().run()
        if self.editable_mode:  # an editable install runs from the repository, which has the data
            build_sdk_wheel(HERE / "layers" / "core" / SDK_DIST)
            return
        spec = importlib.util.spec_from_file_location("bundle_data", HERE / "scripts" / "bundle_data.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        module.bundle(Path(self.build_lib) / "bench_core", HERE / "benchmarks")
        build_sdk_wheel(Path(self.build_lib) / SDK_DIST)


def build_sdk_wheel(target: Path) -> None:
    """`target` holds the SDK's wheel and nothing else. Built from a copy of sdk/, so no build
    leftovers in the source tree (or stale ones from it) reach the wheel."""
    with tempfile.TemporaryDirectory() as work:
        source = Path(work) / "sdk"
        shutil.copytree(HERE / "sdk", source,
                        ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
        shutil.rmtree(target, ignore_errors=True)
        target.mkdir(parents=True)
        done = subprocess.run([sys.executable, "-c", BUILD_SDK, str(target.resolve())], cwd=source,
                              capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"could not build the SDK wheel from sdk/:\n{done.stderr[-3000:]}")


setup(cmdclass={"build_py": BuildWithData})
