"""Load-test results read in the formats the tools write, and their SLO-holding rate.

vLLM's serving benchmark (``benchmark_serving.py``, ``vllm bench serve``, its sweeps), GuideLLM
reports and AIPerf/GenAI-Perf profile exports become :class:`~.points.BenchPoint` s (one per
tested load); :mod:`.slo` finds the highest tested rate at which an SLO held, and :mod:`.row`
turns it into a measured capacity row. Imports: :mod:`models` only.
"""
