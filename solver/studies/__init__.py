"""Studies built from many plans: sweeps, purchase scenarios side by side, rule-of-thumb baselines.

A sweep reads its ``--vary`` options (:mod:`.sweep_spec`), changes scenario fields by path
(:mod:`.scenario_paths`), lays out its variants (:mod:`.sweep`), plans them on local processes
or Ray (:mod:`.executors`) through :mod:`.sweep_runner`, which records each as it lands
(:mod:`.sweep_store`), and tabulates them (:mod:`.sweep_results`, :mod:`.tornado`,
:mod:`.sweep_workbook`). ``compare`` (:mod:`.compare`) is its small case.

Imports: anything below the CLI (:mod:`models`, and every sub-package of :mod:`solver` but the CLI);
``ray`` only inside :class:`.executors.RayExecutor`.
"""
