#!/usr/bin/env bash
# Every route of a real hetpoold, error cases included, and a job run to
# its end with the local backend (tests/integration/api.py).
exec python3 "$(dirname "$0")/api.py"
