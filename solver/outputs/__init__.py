"""What a plan writes: files, figures, report, charts, workbooks and the capacity contract.

Every file reaches the disk through :mod:`.atomic`. Figures a reviewer reads are derived once in
:mod:`.figures` and rendered by the report, the charts and the workbook.

Imports: :mod:`models`, :mod:`solver.capacity`, :mod:`solver.survivability`. Never the program's
solve strategy (:mod:`solver.solve`), studies or the CLI.
"""
