"""`python -m hermes_tui` runs the same entry point as the `hermes-tui` script."""

from hermes_tui.cli import main

raise SystemExit(main())
