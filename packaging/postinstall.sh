#!/bin/sh
# Tell systemd of the unit; the service starts once the operator enables it, after setting
# keys in /etc/default/laurel.
set -e
if [ -d /run/systemd/system ]; then
	systemctl daemon-reload >/dev/null || true
fi
