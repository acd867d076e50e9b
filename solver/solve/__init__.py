"""Getting a plan out of the program: solver back-ends, starts, improvement steps and the strategy.

:mod:`.backends` runs HiGHS or CBC and says how a solve ended; the greedy, aggregated and dedicated
starts and the neighbourhoods improve an incumbent; :mod:`.strategy` orders them within the time
limit; :mod:`.assemble` turns the solution into a typed :class:`~models.plan.Plan`; :mod:`.diagnose`
says which requirement an infeasible scenario cannot meet, and by how much.

Imports: :mod:`models`, :mod:`solver.capacity`, :mod:`solver.program`, :mod:`solver.survivability`.
Never outputs, studies or the CLI.
"""

#: MIP solvers a plan can be made with (the CLI offers them without importing a solver).
SOLVERS = ("highs", "cbc")
