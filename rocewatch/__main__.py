"""``python -m rocewatch`` is the ``rocewatch`` command."""

from rocewatch.cli import main

main()
