"""One evaluation run's surroundings.

``provider`` (the run's emulated provider, network, client image and backend),
``directory`` (the run directory), ``study_plan`` (freezing the study plan), ``outputs``
(rendered outputs), ``report_source`` (where a report's inputs come from), ``forest_plot``,
``progress_events`` (the process-wide progress channel), ``trial_inputs`` and
``quota_interval_files``.
"""
