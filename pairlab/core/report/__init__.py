"""The report wing: one analysis rendered for people and machines.

``run`` (the report as a function of stored inputs), ``markdown`` (report.md and
report.json), ``html`` + ``svg`` (the HTML report and its charts), ``words`` (shared
sentences), ``headline`` (the headline table) and ``prefect_ui`` (the Prefect UI artifacts).
"""
