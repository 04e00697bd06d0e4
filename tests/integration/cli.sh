#!/usr/bin/env bash
# hetpool --server URL recommend|run|jobs|status|cancel|logs against a real
# hetpoold (tests/integration/cli.py).
exec python3 "$(dirname "$0")/cli.py"
