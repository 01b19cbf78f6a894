#!/bin/sh
set -e
if [ -d /run/systemd/system ]; then
	systemctl stop laurel.service >/dev/null 2>&1 || true
	systemctl disable laurel.service >/dev/null 2>&1 || true
fi
