"""``python -m rocewatch`` is the ``rocewatch`` command."""

from rocewatch.cli.main import main

main()
