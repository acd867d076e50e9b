"""Does a fleet hold its workloads through the failures it must survive?

Failure arithmetic (demand per slice, usable and failover capacity, what survives a node, zone or
region loss), fleets read from a plan or an inventory, the survivability check with latency at load,
degradation plans, and the independent verifier that re-checks a plan with plain arithmetic.

Imports: :mod:`models` and :mod:`solver.capacity`. Never the program, the solve, outputs or the CLI.
"""
