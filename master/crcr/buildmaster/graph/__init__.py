"""The build graph (docs/build-graph.md): a backend whose suites fan out has a parent build per commit, on the relay's
own worker, which triggers one child build per suite on any free unit of the device and draws each suite's verdict
from what its child's run left."""
