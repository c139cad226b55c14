"""`python -m topologies`: see topologies.cli."""

from topologies.cli import main

raise SystemExit(main())
