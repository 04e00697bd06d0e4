#!/usr/bin/env bash
# HTTPS with a self-signed certificate; non-loopback needs TLS or
# --insecure (tests/integration/tls.py).
exec python3 "$(dirname "$0")/tls.py"
