#!/usr/bin/env bash
# Slow clients, the connection cap, oversized headers and bodies, many
# clients at once (tests/integration/limits.py).
# hp-test: alone (it counts connections closed by the request timeout,
# which a loaded machine under ASan delays past its reading)
exec python3 "$(dirname "$0")/limits.py"
