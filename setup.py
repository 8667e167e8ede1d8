"""The wheel's one addition to pyproject.toml: the data that lives once in `benchmarks/` (the
judge's prompts, the benchmark suites) is copied into the built bench_core, where an installed
server finds it (scripts/bundle_data.py, shared with the layer build)."""

import importlib.util
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent


class BuildWithData(build_py):
    def run(self) -> None:
        super().run()
        if self.editable_mode:  # an editable install runs from the repository, which has the data
            return
        spec = importlib.util.spec_from_file_location("bundle_data", HERE / "scripts" / "bundle_data.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        module.bundle(Path(self.build_lib) / "bench_core", HERE / "benchmarks")


setup(cmdclass={"build_py": BuildWithData})
