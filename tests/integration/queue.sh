#!/usr/bin/env bash
# A job behind a long queue of jobs that cannot start still starts when its
# devices are free (tests/integration/queue.py).
exec python3 "$(dirname "$0")/queue.py"
