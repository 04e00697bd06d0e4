#!/usr/bin/env bash
# Slow clients, the connection cap, oversized headers and bodies, many
# clients at once (tests/integration/limits.py).
exec python3 "$(dirname "$0")/limits.py"
