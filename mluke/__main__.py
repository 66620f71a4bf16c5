"""``python -m mluke`` runs the CLI."""

from mluke.cli import main

main()
