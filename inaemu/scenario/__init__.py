"""Scenarios: one network that lives through a timeline of jobs and events (docs/scenarios.md).

`Experiment` builds one in Python, `load_scenario` reads one from a file, `run_scenario` runs
it on the simulator or Mininet; results are plain data (inaemu/scenario/results.py).
"""

from inaemu.scenario.api import Experiment, run_scenario
from inaemu.scenario.model import ScenarioError

__all__ = ["Experiment", "ScenarioError", "load_scenario", "run_scenario"]


def load_scenario(path):
    """A scenario file (YAML or JSON) as a `Scenario`; ScenarioError with the line if not."""
    from inaemu.scenario.parse import load_scenario as load
    return load(path)
