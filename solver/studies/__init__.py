"""Studies built from many plans: purchase scenarios side by side, and rule-of-thumb baselines.

Imports: anything below the CLI (:mod:`models`, and every sub-package of :mod:`solver` but the CLI).
"""
