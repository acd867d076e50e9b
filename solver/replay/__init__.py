"""Trace replay: request traces, workload profiles of a trace, and the discrete-event engine.

Reads Azure, Mooncake and CSV traces (or draws synthetic ones), profiles them — or vLLM's
Prometheus metrics — into workload blocks, and replays them on a fleet's replicas with
continuous batching to measure TTFT and per-token latency.

Imports: :mod:`models`, :mod:`solver.capacity` and :mod:`solver.survivability`. Never the
program, the solve, outputs or the CLI.
"""
