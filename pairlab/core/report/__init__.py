"""The report wing: one analysis rendered for people and machines.

``run`` (the report as a function of stored inputs), ``markdown`` (report.md and
report.json), ``html`` + ``html_charts`` + ``svg`` (the HTML report, its forest plots and
quota charts, the SVG primitives), ``words`` (shared sentences; decision words come from
``analysis.decisions``), ``headline`` (the headline table) and ``prefect_ui`` (the Prefect UI
artifacts).
"""
