"""The capacity model: what one replica of a configuration carries under a workload's SLO.

Memory (weights + KV cache + runtime overhead + margin), prefill and decode step times, the
queueing estimates of TTFT and per-token latency, the SLO-holding rate of a replica, the capacity
table of a scenario (one row per feasible workload × GPU × precision × TP), prices per
configuration, measured rows and their expiry, the calibration of step-time factors, and
(``bench/``) load-test results read as their tools write them, turned into measured rows.

Imports: :mod:`models` only (and numpy/pandas). Never the program, the solve, outputs or the CLI.
"""
