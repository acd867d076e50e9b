"""Built-in catalog and example scenarios, shipped as package data.

Found through ``importlib.resources`` so they resolve whether fleetplan is installed editable
or as a wheel.
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path


def inputs_dir() -> Path:
    """Directory holding ``catalog/`` and ``scenarios/``."""
    return Path(str(files("inputs")))


def catalog_dir() -> Path:
    """The built-in catalog: ``gpus.yaml``, ``models.yaml`` and price tables."""
    return inputs_dir() / "catalog"


def scenarios_dir() -> Path:
    """The example scenarios; ``demo.yaml`` is the default for ``fleetplan plan``."""
    return inputs_dir() / "scenarios"


def demo_scenario() -> Path:
    """The embedded default scenario."""
    return scenarios_dir() / "demo.yaml"
