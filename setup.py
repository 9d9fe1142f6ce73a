"""The wheel carries the Snakemake workflow and its configs (package data under
``contextuality/bundled/``), so that ``pip install contextuality`` gives the workflow too:
``contextuality workflow`` names its Snakefile (`contextuality.configuration.bundle`)."""

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

BUNDLED = ("workflow", "config")


class BuildWithWorkflow(build_py):
    """Copy workflow/ and config/ into the built package, links followed (the config
    schema is a link to the package's own copy)."""

    def run(self) -> None:
        super().run()
        for name in BUNDLED:
            target = Path(self.build_lib) / "contextuality" / "bundled" / name
            shutil.copytree(
                name, target, dirs_exist_ok=True, ignore=shutil.ignore_patterns("__pycache__")
            )


setup(cmdclass={"build_py": BuildWithWorkflow})
