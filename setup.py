"""Ship the repository's top-level folders under one import name, `relpipe`.

The folders (`core/ pipeline/ changelog/ images/ engine/ validate/`) stay where DESIGN.md puts
them; each becomes `relpipe.<folder>` in the wheel, and `relpipe` itself is a PEP 420 namespace,
so installing relpipe adds exactly one top-level import name. Everything else is in
pyproject.toml.
"""

from setuptools import find_packages, setup

LAYERS = ("core", "pipeline", "changelog", "images", "engine", "validate")

packages = []
for layer in LAYERS:
    packages += [f"relpipe.{layer}"] + [f"relpipe.{layer}.{sub}" for sub in find_packages(layer)]

setup(packages=packages, package_dir={f"relpipe.{layer}": layer for layer in LAYERS})
