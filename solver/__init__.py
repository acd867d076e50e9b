"""fleetplan's computations, one sub-package per stage of the data flow.

``capacity`` (what a replica carries) → ``program`` (the integer program) → ``solve`` (a plan out of
it) → ``survivability`` (checks of a fleet) and ``replay`` (trace replay) → ``outputs`` (files) →
``studies`` (many plans) → ``cli`` (the ``fleetplan`` command). Imports point down this list only.
"""
