"""The fleet integer program: its data, variables, constraint families, valid cuts and values.

Built only from a scenario's capacity table (:mod:`solver.capacity`) through :mod:`.data`; the
formulation is written once, in maths, in :mod:`.build`. Solving it is :mod:`solver.solve`'s job.

Imports: :mod:`models` and :mod:`solver.capacity`. Never the solve strategy, outputs or the CLI.
"""
