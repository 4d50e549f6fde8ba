"""Account stores (issue 27): where an operator's credentials live.

``local_file``: a JSON file with mode 600 (``$PAIRLAB_ACCOUNTS_FILE``, else
``$XDG_CONFIG_HOME/pairlab/accounts.json``, else ``~/.config/pairlab/accounts.json``).
``prefect_secret``: one Prefect Secret block per account (``pairlab-account-<name>``).
``selection``: which one applies (a Prefect server in ``PREFECT_API_URL`` -> Secret blocks)
and the look-ups the commands and runs use. The rules are in ``pairlab.core.accounts``.
"""
