#!/bin/sh
# The container's entry point: speedtest-x's environment variables, mapped onto
# `wirespeed web` flags, so `docker run -e MAX_LOG_COUNT=… -e SAME_IP_MULTI_LOGS=…` works as it
# does for speedtest-x. Extra arguments are passed on (`docker run IMAGE --geoip /data/x.mmdb`).
#   WEBPORT             listening port (default 80)          → --port
#   MAX_LOG_COUNT       results kept, oldest dropped (100)   → --max-results
#   SAME_IP_MULTI_LOGS  true: every result of a network kept → --same-ip-multi-results
#   GEOIP               a MaxMind-format .mmdb file          → --geoip
#   TRUSTED_PROXY       the reverse proxy's network          → --trusted-proxy
# Any other wirespeed setting with an environment variable (WIRESPEED_DB,
# WIRESPEED_ADMIN_PASSWORD_HASH) is read by wirespeed itself.
set -eu

is_number() { case "$1" in '' | *[!0-9]*) return 1 ;; *) return 0 ;; esac; }

port=${WEBPORT:-80}
keep=${MAX_LOG_COUNT:-100}
is_number "$port" || { echo "WEBPORT must be a port number, not '$port'" >&2; exit 2; }
is_number "$keep" || { echo "MAX_LOG_COUNT must be a whole number, not '$keep'" >&2; exit 2; }
set -- --port "$port" --max-results "$keep" "$@"
case "${SAME_IP_MULTI_LOGS:-false}" in
  true | TRUE | True | 1 | yes) set -- --same-ip-multi-results "$@" ;;
  false | FALSE | False | 0 | no | '') ;;
  *) echo "SAME_IP_MULTI_LOGS must be true or false, not '$SAME_IP_MULTI_LOGS'" >&2; exit 2 ;;
esac
if [ -n "${GEOIP:-}" ]; then set -- --geoip "$GEOIP" "$@"; fi
if [ -n "${TRUSTED_PROXY:-}" ]; then set -- --trusted-proxy "$TRUSTED_PROXY" "$@"; fi
exec "${WIRESPEED_BIN:-wirespeed}" web "$@"
